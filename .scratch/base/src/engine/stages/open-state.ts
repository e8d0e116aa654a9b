/**
 * Stage 1, open state: decide whether this invocation resumes the last run or starts a new one.
 *
 * A run that completed is over: the next invocation is a new run (tonight's load), with a new id. A run that did
 * not complete is resumed, keeping its id, so the units it committed (under run-scoped ids) are recognised and
 * skipped. The state file is where paid job ids are checkpointed before anyone waits on them.
 *
 * First of all it takes the state directory's lock: a second invocation that cleared the temp directory or read
 * the state while the first run used them would take over a live run (and delete its downloads).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { acquireRunLock, type LockOptions, type RunLock } from '../run-lock.js';
import { FileStateStore, stateDirUnusable } from '../state-store.js';

export interface OpenStateOptions {
  stateFile: string;
  /** Downloads a killed run could not delete. */
  tmpDir: string;
  /** The state directory's lock file (paths.ts). */
  lockFile: string;
  /** Who takes the lock, and how long to wait for it. */
  lock: LockOptions;
  /** `--fresh`: start a new run even if the last one did not complete. */
  fresh: boolean;
  /** A fixed run id (dead-letter replay): resumed only if the unfinished run has this id. */
  runId?: string;
  /** `resume.stale_after` in ms: an unfinished run that started longer ago than this is not resumed. */
  staleAfterMs?: number;
}

export interface OpenedState {
  state: FileStateStore;
  runId: string;
  resumed: boolean;
  /** The unfinished run that was not resumed because it started more than `staleAfterMs` ago. */
  stale?: { runId: string; startedAt: string };
  /** Held until the run ends: the caller releases it. */
  lock: RunLock;
}

export async function openRunState(opts: OpenStateOptions): Promise<OpenedState> {
  const lock = await lockStateDir(opts);
  try {
    return { ...(await openLocked(opts)), lock };
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/** Creating the state directory or its lock file is the run's first write: a failure says what to change. */
async function lockStateDir(opts: OpenStateOptions): Promise<RunLock> {
  try {
    await mkdir(path.dirname(opts.lockFile), { recursive: true });
    return await acquireRunLock(opts.lockFile, opts.lock);
  } catch (err) {
    // A lock held by another run (LockedError) or an interrupted wait is not a filesystem problem.
    if (isErrno(err)) throw stateDirUnusable(opts.lockFile, err);
    throw err;
  }
}

function isErrno(err: unknown): boolean {
  return /^E[A-Z]+$/.test(String((err as NodeJS.ErrnoException | undefined)?.code ?? ''));
}

async function openLocked(opts: OpenStateOptions): Promise<Omit<OpenedState, 'lock'>> {
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
  await state.clear();
  const runId = opts.runId ?? newRunId(new Date(), last);
  await state.set('run:id', runId);
  return { state, runId, resumed, ...(stale && { stale: { runId: last!, startedAt: startedAt.toISOString() } }) };
}

/**
 * When a run with this id (newRunId) started; undefined for an id of another form. Ids of earlier versions give the
 * start to the second (`20261123194100-a1b2c3`), today's to the millisecond (`20261123194100123-a1b2c3`).
 */
export function runStartedAt(runId: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{3})?-/.exec(runId);
  return m ? new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7] ?? '000'}Z`) : undefined;
}

/**
 * A run's id: its start to the millisecond, then a random suffix: `20261123194100123-a1b2c3`. The cursor orders the
 * runs' checkpoints by these ids (engine/cursor.ts: the newest run's checkpoint of a unit wins), so an id must sort
 * after the id of the pipeline's run before it (`previous`): never before it when two runs start in one second or
 * millisecond, or the clock went back; a later millisecond than the previous start is taken then. An id of an
 * earlier version (to the second) sorts before every id of the same second with milliseconds ('-' < '0').
 */
export function newRunId(now: Date, previous?: string): string {
  const before = previous === undefined ? undefined : runStartedAt(previous);
  const ms = before === undefined ? now.getTime() : Math.max(now.getTime(), before.getTime() + 1);
  const stamp = new Date(ms)
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 17);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}
