/** What callers other than the CLI (dead-letter replay, tests, benches) may change about a run. */
import type { Logger, Source, WorkUnit } from '../core/types.js';
import type { Registry } from '../pipeline/registry.js';
import type { ServiceConnection } from '../runtime/service.js';

export interface RunHooks {
  /** Called with the service connection once created (tests read the embedded emulator's counters). */
  onService?: (s: ServiceConnection) => void;
  /** Replaces the pipeline's source (dead-letter replay). */
  source?: Source;
  log?: Logger;
  /**
   * A fixed run id (dead-letter replay: one id per batch of letters, so a replay run again after a crash, even one
   * after its last commit, recognises every unit it committed).
   */
  runId?: string;
  /** Index of the first transform a unit goes through (replay: a transform's letters re-enter at that transform). */
  firstTransform?: (u: WorkUnit) => number;
  /** The components the pipeline's types are looked up in (tests pass in-memory ones). Default: the registry. */
  registry?: Registry;
  /** Test seam: runs after a unit committed in every sink; a throw fails the run there, like a crash. */
  afterCommit?: (u: WorkUnit) => void | Promise<void>;
}
