/**
 * Whether this invocation resumes the last run or starts a new one, decided from the run's state file (taken with
 * the pipeline's lock held: the runtime takes it first).
 *
 * A run that completed is over: the next invocation is a new run (tonight's load), with a new id. A run that did
 * not complete is resumed, keeping its id, so the units it committed (under run-scoped ids) are recognised and
 * skipped. The state file is where paid job ids are checkpointed before anyone waits on them.
 */
import { rm } from 'node:fs/promises';
import { newRunId, runStartedAt } from './run-id.js';
import { FileStateStore } from './state-store.js';

export interface RunStateOptions {
  stateFile: string;
  /** Downloads a killed run could not delete. */
  tmpDir: string;
  /** `--fresh`: start a new run even if the last one did not complete. */
  fresh: boolean;
  /** A fixed run id (dead-letter replay, a shard of a prepared job): resumed only if the unfinished run has it. */
  runId?: string;
  /** `resume.stale_after` in ms: an unfinished run that started longer ago than this is not resumed. */
  staleAfterMs?: number;
}

export interface RunState {
  state: FileStateStore;
  runId: string;
  resumed: boolean;
  /** The unfinished run that was not resumed because it started more than `staleAfterMs` ago. */
  stale?: { runId: string; startedAt: string };
  /** With `fresh`: puts back the state as it was before (a refused --fresh leaves the last run resumable). */
  undoFresh?: () => Promise<void>;
}

/** Opens the run's state: the unfinished run resumed, or a new run started (its id written first). */
export async function openRunState(opts: RunStateOptions): Promise<RunState> {
  const state = await FileStateStore.open(opts.stateFile);
  const last = state.get<string>('run:id');
  const resumable =
    !opts.fresh &&
    last !== undefined &&
    state.get('run:complete') !== true &&
    (opts.runId === undefined || opts.runId === last);
  const startedAt = resumable && opts.staleAfterMs !== undefined ? runStartedAt(last) : undefined;
  const stale = startedAt !== undefined && Date.now() - startedAt.getTime() > opts.staleAfterMs!;
  const resumed = resumable && !stale;
  // Their units are read again, or were committed before the kill. The lock says no other run is using them.
  await rm(opts.tmpDir, { recursive: true, force: true });
  if (resumed) return { state, runId: last, resumed };
  const before = opts.fresh ? state.keys().map((k) => [k, state.get(k)] as const) : undefined;
  const undoFresh =
    before &&
    (async (): Promise<void> => {
      await state.clear();
      for (const [k, v] of before) await state.set(k, v);
    });
  await state.clear();
  const runId = opts.runId ?? newRunId(new Date(), last);
  await state.set('run:id', runId);
  return {
    state,
    runId,
    resumed,
    ...(stale && { stale: { runId: last!, startedAt: startedAt.toISOString() } }),
    ...(undoFresh && { undoFresh }),
  };
}
