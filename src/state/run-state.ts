/**
 * Whether this invocation resumes the last run or starts a new one, decided from the run's state file (taken with
 * the pipeline's lock held: the runtime takes it first).
 *
 * A run that completed is over: the next invocation is a new run (tonight's load), with a new id. A run that did
 * not complete is resumed, keeping its id, so the units it committed (under run-scoped ids) are recognised and
 * skipped. The state file is where paid job ids are checkpointed before anyone waits on them, and where the run's
 * ledger of paid work is kept (paid-ledger.ts). A new run starts with an empty state but for the keys a source keeps
 * across runs (`kept:`, core/source-contract.ts), which a run that starts over forgets (`forgetKept`).
 */
import { rm } from 'node:fs/promises';
import { KEPT_STATE_PREFIX } from '../core/source-contract.js';
import { PAID_LEDGER_KEY } from './paid-ledger.js';
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
  /**
   * The unfinished run this one replaced (`--fresh`, stale): its id and its ledger of paid work as its state held it,
   * so what its last attempt paid is still reported when that attempt is marked crashed.
   */
  replaced?: { runId: string; paid: unknown };
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
  const replaced =
    last !== undefined && state.get('run:complete') !== true
      ? { runId: last, paid: state.get(PAID_LEDGER_KEY) }
      : undefined;
  await state.clear(KEPT_STATE_PREFIX);
  const runId = opts.runId ?? newRunId(new Date(), last);
  await state.set('run:id', runId);
  return {
    state,
    runId,
    resumed,
    ...(stale && { stale: { runId: last!, startedAt: startedAt.toISOString() } }),
    ...(undoFresh && { undoFresh }),
    ...(replaced && { replaced }),
  };
}

/** A run that starts over (`--fresh`, `--reset-cursor`) forgets what earlier runs kept (`kept:` keys). */
export async function forgetKept(state: FileStateStore): Promise<void> {
  for (const k of state.keys(KEPT_STATE_PREFIX)) await state.delete(k);
}
