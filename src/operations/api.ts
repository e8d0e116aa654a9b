/** What the CLI asks of the engine. */
import type { PaidLine } from '../core/paid-work.js';
import type { SinkSchemaChanges } from '../core/types.js';

export type { SinkSchemaChanges } from '../core/types.js';
import type { CheckResult } from '../observe/events.js';

export interface RunOptions {
  /** Forget checkpoints and committed units; start over. */
  fresh: boolean;
  /**
   * `--allow-duplicates`: with `fresh`, load every unit again even into `append` outputs that hold what earlier runs
   * committed (without it such a run refuses: operations/fresh-guard.ts).
   */
  allowDuplicates?: boolean;
  /** `--reset-cursor`: an incremental source starts from its initial cursor (`fresh` implies it). */
  resetCursor?: boolean;
  /**
   * `--from <v> [--to <v>]`: a backfill, a run that loads this window of the source's cursor again and leaves the
   * nightly cursor where it was (operations/backfill.ts). `allowDuplicates` lets it load into `write: append` outputs.
   */
  backfill?: { from: string; to?: string };
  /** Run only the units whose stable hash falls in shard `index` of `count` (0-based index). */
  shard?: { index: number; count: number };
  logFormat: 'text' | 'json';
  quiet: boolean;
  /** Progress bars on a TTY, periodic lines otherwise. */
  progress: boolean;
  /**
   * `--wait[=timeout]`: wait up to this long for another run holding the pipeline's lock (or an output's) to
   * finish, instead of failing at once with LockedError (exit code 3). Default 0.
   */
  waitForLockMs?: number;
  /** Written into the lock file for whoever finds it taken, e.g. `sluice run pipelines/x.yaml`. */
  command?: string;
  /**
   * Aborting it interrupts the run (SIGINT/SIGTERM): no new unit starts, reads in flight are aborted, a unit whose
   * sink commit is under way finishes, the locks are released, and the run throws InterruptedError. The abort
   * reason `'SIGTERM'` gives exit code 143; anything else counts as SIGINT (130).
   */
  signal?: AbortSignal;
}

export interface RunSummary {
  /** The run's id: the same in the logs, `runs.jsonl`, the sinks' `_sluice_runs`, notifications, metrics, traces. */
  run?: string;
  /** `i/n` for a sharded run. */
  shard?: string;
  pipeline: string;
  units: { total: number; done: number; skipped: number; failed: number };
  /** Records this run committed (once per unit, whatever the number of sinks; summary.ts `CommittedRecords`). */
  records: number;
  /**
   * Records the source yielded to the sinks, tries that failed and were read again included: `recordsRead -
   * records` were read by tries that failed, or by units not committed (a failure, an interrupt).
   */
  recordsRead: number;
  bytes: number;
  retries: number;
  deadLetters: number;
  /** The most frequent reasons of this run's dead letters (up to 3), most frequent first. */
  deadLetterReasons: { reason: string; count: number }[];
  /** Units whose raw file at least one sink loaded natively (the fast path). */
  nativeLoads: number;
  /** Units whose raw file a sink refused to load natively and the engine decoded in JS instead. */
  nativeFallbacks: number;
  durationMs: number;
  /** Where each sink wrote (paths, tables). */
  outputs: string[];
  /**
   * Columns this run added to or widened in each sink's table / dataset (schema evolution), in the sink's own type
   * names; only sinks that changed something.
   */
  schemaChanges: SinkSchemaChanges[];
  /** Results of the sinks' `checks:` after the load (absent: no sink has checks). */
  checks?: CheckResult[];
  /**
   * Calls the service billed during this run (this attempt), every kind together: the run's ledger of paid work
   * (core/paid-work.ts), the same figure as runs.jsonl's `paidCalls`, webhooks' `paid_calls` and the metrics'.
   */
  paidCalls: number;
  /** Records the service charged during this run (filter jobs' snapshots, deep lookups' matched records). */
  recordsCharged: number;
  /** The ledger's lines of this run: each kind of billed call, what for, how many, retried, wasted, records. */
  paid: PaidLine[];
}

export interface PlanReport {
  pipeline: string;
  source: string;
  /** Units, or a description of the units a paid job would produce (e.g. "parts of the snapshot the filter creates"). */
  units: { id: string; estimatedRecords?: number }[];
  /** HTTP requests the run would make, described (method path), without making paid ones. */
  requests: string[];
  targets: string[];
  /** Per sink, in the order of `targets`: the columns its rows will have (`sluice schema`, `sluice plan`). */
  columns?: SinkColumns[];
  estimatedRecords?: number;
  notes: string[];
}

/** A sink's columns as the transforms declare them, in the sink's own type names; `declared: false`: inferred. */
export interface SinkColumns {
  target: string;
  declared: boolean;
  columns: { name: string; type: string; nullable: boolean; description: string }[];
}
