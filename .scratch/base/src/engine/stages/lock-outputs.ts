/**
 * The run locks of the sinks' outputs (a file sink's directory, which two pipelines may share), taken after the
 * state's lock and before any sink opens: opening a file sink settles and deletes another writer's temp files.
 * Taken in path order, so two runs that wait (`--wait`) for the same outputs never hold one each.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../core/errors.js';
import type { Logger, Sink } from '../../core/types.js';
import { errorText } from '../error-text.js';
import { acquireRunLock, type LockOptions, type RunLock } from '../run-lock.js';

export async function lockOutputs(sinks: readonly Sink[], baseDir: string, opts: LockOptions): Promise<RunLock[]> {
  const files = [...new Set(sinks.flatMap((s) => (s.lockPath ? [s.lockPath(baseDir)] : [])))].sort();
  const locks: RunLock[] = [];
  try {
    for (const file of files) {
      await makeDir(path.dirname(file));
      locks.push(await acquireRunLock(file, opts).catch((err: unknown) => Promise.reject(unwritable(file, err))));
    }
  } catch (err) {
    await releaseLocks(locks, opts.log);
    throw err;
  }
  return locks;
}

/** Releases in reverse order; a lock that cannot be removed is only warned about (the next run takes it over). */
export async function releaseLocks(locks: readonly RunLock[], log: Logger): Promise<void> {
  for (const lock of [...locks].reverse())
    await lock.release().catch((e: unknown) => log.warn(`releasing the lock ${lock.file}: ${errorText(e)}`));
}

async function makeDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SluiceError(`cannot create the output directory ${dir} (${code})`, {
      hint:
        code === 'EEXIST' || code === 'ENOTDIR'
          ? 'a file is in the way of that directory: move the file, or point the sink somewhere else'
          : 'give the user running sluice write access there, or point the sink somewhere writable',
      cause: err,
    });
  }
}

/** The lock file cannot be created in an existing directory (read-only, full): name the directory and the fix. */
function unwritable(file: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // A lock held by another run (LockedError) or an interrupted wait is not a filesystem problem.
  if (err instanceof SluiceError || !/^E[A-Z]+$/.test(String(code ?? ''))) return err;
  return new SluiceError(`cannot write to the output directory ${path.dirname(file)} (${code})`, {
    hint: 'give the user running sluice write access there, or point the sink somewhere writable',
    cause: err,
  });
}
