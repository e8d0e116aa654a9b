/**
 * The run's durable state: one JSON file written by temp-file + fsync + rename, so a crash leaves either the old or
 * the new state, never half of one. `set` resolves only when the bytes are on disk: sources checkpoint paid job ids
 * here *before* waiting on them. Changes made while a write is on its way share the next write: a crawl's pages,
 * answered together, each record their checkpoint and their paid request without a write (two fsyncs) apiece.
 */
import { mkdir, open, readFile, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { PRIVATE_DIR, PRIVATE_FILE } from '../core/private-files.js';
import { failpoint } from '../core/failpoints.js';
import type { StateStore } from '../core/types.js';

export class FileStateStore implements StateStore {
  private data: Record<string, unknown>;
  /** Writes are chained so concurrent `set` calls never interleave partial files. */
  private writing: Promise<void> = Promise.resolve();
  /** The write queued behind the one on its way, not started yet: it writes every change made before it starts. */
  private queued: Promise<void> | undefined;
  private wrote = false;

  private constructor(
    readonly file: string,
    data: Record<string, unknown>,
  ) {
    this.data = data;
  }

  /** Reads the state if there is any; the directory is created on the first write (so `plan` leaves no trace). */
  static async open(file: string): Promise<FileStateStore> {
    let data: Record<string, unknown> = {};
    let text: string | undefined;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw stateDirUnusable(file, err);
    }
    if (text !== undefined)
      try {
        data = JSON.parse(text) as Record<string, unknown>;
      } catch (err) {
        throw new SluiceError(`the run state ${file} is not valid JSON: ${(err as Error).message}`, {
          hint: 'it was changed outside sluice: restore it, or delete it (the next run then starts over and reads every unit again)',
          cause: err,
        });
      }
    return new FileStateStore(file, data);
  }

  get<T = unknown>(key: string): T | undefined {
    return this.data[key] as T | undefined;
  }

  keys(prefix = ''): string[] {
    return Object.keys(this.data).filter((k) => k.startsWith(prefix));
  }

  set(key: string, value: unknown): Promise<void> {
    this.data[key] = value;
    return this.flush();
  }

  delete(key: string): Promise<void> {
    delete this.data[key];
    return this.flush();
  }

  /** Forgets every key but those starting with `keepPrefix` (none: all), in one write. */
  async clear(keepPrefix?: string): Promise<void> {
    const kept = keepPrefix === undefined ? [] : this.keys(keepPrefix);
    this.data = Object.fromEntries(kept.map((k) => [k, this.data[k]]));
    await this.flush();
  }

  private flush(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.wrote) {
      this.wrote = true;
      this.writing = this.writing.then(() => removeStaleTemps(this.file));
    }
    const write = this.writing.then(() => {
      this.queued = undefined;
      return writeAtomic(this.file, JSON.stringify(this.data, null, 1));
    });
    this.queued = write;
    this.writing = write;
    return write;
  }
}

/**
 * Temp files of writers killed between their write and their rename (kill -9, power cut): each process names its
 * own, so they would pile up. Only a dead process's are removed: a live one may be about to rename its file.
 */
async function removeStaleTemps(file: string): Promise<void> {
  const prefix = `${path.basename(file)}.`;
  let names: string[];
  try {
    names = await readdir(path.dirname(file));
  } catch {
    return; // no directory yet: nothing left behind; the write reports a real problem
  }
  for (const name of names) {
    const pid = Number(name.startsWith(prefix) && name.endsWith('.tmp') ? name.slice(prefix.length, -4) : NaN);
    if (Number.isInteger(pid) && pid !== process.pid && !isAlive(pid))
      await rm(path.join(path.dirname(file), name), { force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The state directory (of `file`, a file in it) cannot be read or written: say which and what to change, not just
 * the errno.
 */
export function stateDirUnusable(file: string, err: unknown): SluiceError {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  return new SluiceError(`cannot use the state directory ${path.dirname(file)} (${code})`, {
    hint:
      code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR'
        ? 'a file is in the way: point `state_dir` at a directory (relative to the pipeline file), or move that file'
        : 'give the user running sluice write access to it, or point `state_dir` somewhere writable',
    cause: err,
  });
}

async function writeAtomic(file: string, text: string): Promise<void> {
  try {
    await writeDurably(file, text);
  } catch (err) {
    throw stateDirUnusable(file, err);
  }
}

async function writeDurably(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR });
  const tmp = `${file}.${process.pid}.tmp`;
  // The state holds paid jobs' ids and what the run learnt of the data: the user's alone, whatever the umask.
  const fh = await open(tmp, 'w', PRIVATE_FILE);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  failpoint('state:before-rename');
  await rename(tmp, file);
  // The rename is durable only once the directory entry is: a checkpointed job id must survive a power cut.
  const dir = await open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** In-memory store for `plan` and tests. */
export class MemoryStateStore implements StateStore {
  readonly data = new Map<string, unknown>();
  get<T = unknown>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }
  async set(key: string, value: unknown): Promise<void> {
    this.data.set(key, value);
  }
  async delete(key: string): Promise<void> {
    this.data.delete(key);
  }
}
