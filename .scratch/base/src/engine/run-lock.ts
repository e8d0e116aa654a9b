/**
 * One run of a pipeline at a time: a lock file beside the pipeline's state (and in a file sink's output directory,
 * which two pipelines may share). The lock is a file created with O_EXCL holding who took it; it is removed when the
 * run ends. A holder that died without removing it (kill -9, a power cut) is recognised on the same host by its pid
 * being gone, and the lock is taken over with a log line. Another host's lock is never taken over: its pid means
 * nothing here, and a shared directory is exactly where two hosts could meet.
 */
import { hostname } from 'node:os';
import { open, readFile, rm } from 'node:fs/promises';
import { LockedError, type LockHolder } from '../core/errors.js';
import { sleep } from '../core/sleep.js';
import type { Logger } from '../core/types.js';

export { LockedError, type LockHolder } from '../core/errors.js';

/** The run could not take the lock: another live run holds it. Its exit code (3) is its own, for cron. */
function lockedBy(file: string, holder: LockHolder | undefined): LockedError {
  return new LockedError(
    holder
      ? `${file} is locked by pid ${holder.pid} on ${holder.host} since ${holder.since} (${holder.command})`
      : `${file} is locked by another run (its lock file could not be read)`,
    {
      file,
      ...(holder && { holder }),
      hint:
        'another run of this pipeline is in progress: let it finish, or pass --wait (e.g. --wait=10m) to wait for ' +
        `it; if no such process exists${holder && holder.host !== hostname() ? ` on ${holder.host}` : ''}, delete ${file}`,
    },
  );
}

export interface LockOptions {
  /** Written into the lock for whoever finds it taken: the command line of this run. */
  command: string;
  log: Logger;
  /** Wait up to this long for a live holder to finish; 0 = fail at once. */
  waitMs?: number;
  /** Poll interval while waiting. */
  pollMs?: number;
  signal?: AbortSignal;
}

export interface RunLock {
  readonly file: string;
  release(): Promise<void>;
}

/** Whether `pid` is a live process on this host (EPERM: alive but someone else's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readHolder(file: string): Promise<LockHolder | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string') return undefined;
    return {
      pid: parsed.pid,
      host: parsed.host,
      since: String(parsed.since ?? '?'),
      command: String(parsed.command ?? '?'),
    };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw err;
    return undefined; // half-written by a holder killed while writing it: treated as unreadable below
  }
}

/** Creates the lock file or returns undefined when it exists. Other errors (permission, no directory) are thrown. */
async function tryCreate(file: string, me: LockHolder): Promise<boolean> {
  let handle;
  try {
    handle = await open(file, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(JSON.stringify(me) + '\n');
    await handle.sync();
  } finally {
    await handle.close();
  }
  return true;
}

export async function acquireRunLock(file: string, opts: LockOptions): Promise<RunLock> {
  const me: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString(), command: opts.command };
  const deadline = Date.now() + (opts.waitMs ?? 0);
  let announcedWait = false;
  for (;;) {
    if (await tryCreate(file, me)) break;
    let holder: LockHolder | undefined;
    try {
      holder = await readHolder(file);
    } catch {
      continue; // released between our create and our read: try again
    }
    if (holder && holder.host === me.host && !processAlive(holder.pid)) {
      opts.log.warn(
        `taking over the lock ${file}: its holder (pid ${holder.pid}, since ${holder.since}) is no longer running`,
      );
      // Two runs may find the same dead holder: only one of them creates the file after the removal.
      await rm(file, { force: true });
      continue;
    }
    if (Date.now() >= deadline) throw lockedBy(file, holder);
    if (!announcedWait) {
      opts.log.info(`waiting for the lock ${file} (held by pid ${holder?.pid ?? '?'} on ${holder?.host ?? '?'})`);
      announcedWait = true;
    }
    await sleep(Math.min(opts.pollMs ?? 500, Math.max(1, deadline - Date.now())), opts.signal);
  }
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      // Only our own lock is removed: a lock taken over after we were presumed dead is not ours any more.
      const holder = await readHolder(file).catch(() => undefined);
      if (holder && holder.pid === me.pid && holder.host === me.host && holder.since === me.since)
        await rm(file, { force: true });
    },
  };
}
