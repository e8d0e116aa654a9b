/**
 * The checkpoints the sinks committed, read outside a run (`sluice state`, `sluice plan`): under the pipeline's
 * run lock and the outputs' locks, so a run's commit is never seen half-way and no sink's open settles another
 * writer's files beneath it. The locks are taken without waiting: a run in progress fails the read at once with
 * its LockedError (exit 3) rather than holding up a command that only looks.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger, Sink, SinkContext } from '../core/types.js';
import { sinkCheckpoints } from './cursor.js';
import { acquireRunLock } from './run-lock.js';
import { lockOutputs, releaseLocks } from './stages/lock-outputs.js';

export interface ReadCheckpointsOptions {
  /** The pipeline's run lock (`PipelinePaths.lockFile`). */
  lockFile: string;
  baseDir: string;
  pipeline: string;
  /** Written into the locks for whoever finds them taken, e.g. `sluice state p.yaml`. */
  command: string;
  log: Logger;
}

/**
 * Each sink's committed checkpoints by sink unit id, in the order of `sinks`. The sinks are opened as a resumed run
 * opens them (`fresh: false`: nothing is dropped) and closed again, and the locks released, whether or not the read
 * succeeds.
 */
export function readSinkCheckpoints(
  sinks: readonly Sink[],
  opts: ReadCheckpointsOptions,
): Promise<Map<string, unknown>[]> {
  return withSinksOpen(sinks, opts, () => sinkCheckpoints(sinks));
}

/**
 * `fn` with the pipeline's run lock and the outputs' locks held and the sinks open (as a resumed run opens them);
 * closed and released again whatever `fn` does. `sluice state set/reset/drop` change the state inside it.
 */
export async function withSinksOpen<T>(
  sinks: readonly Sink[],
  opts: ReadCheckpointsOptions,
  fn: () => Promise<T>,
): Promise<T> {
  const lockOptions = { command: opts.command, log: opts.log, waitMs: 0 };
  await mkdir(path.dirname(opts.lockFile), { recursive: true });
  const locks = [await acquireRunLock(opts.lockFile, lockOptions)];
  const opened: Sink[] = [];
  try {
    locks.push(...(await lockOutputs(sinks, opts.baseDir, lockOptions)));
    const ctx: SinkContext = {
      log: opts.log,
      // No unit is written here, so no record can be set aside.
      deadLetter: () => undefined,
      baseDir: opts.baseDir,
      pipeline: opts.pipeline,
      fresh: false,
    };
    for (const s of sinks) {
      await s.open(ctx);
      opened.push(s);
    }
    return await fn();
  } finally {
    // A sink that fails to close must not keep the others open or the locks held: the read is over either way.
    for (const s of opened) await s.close().catch(() => undefined);
    await releaseLocks(locks, opts.log);
  }
}
