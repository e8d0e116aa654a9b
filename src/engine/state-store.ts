/**
 * The run's durable state: one JSON file written by temp-file + fsync + rename, so a crash leaves either the old or
 * the new state, never half of one. `set` resolves only when the bytes are on disk: sources checkpoint paid job ids
 * here *before* waiting on them.
 */
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { failpoint } from '../core/failpoints.js';
import type { StateStore } from '../core/types.js';

export class FileStateStore implements StateStore {
  private data: Record<string, unknown>;
  /** Writes are chained so concurrent `set` calls never interleave partial files. */
  private writing: Promise<void> = Promise.resolve();

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
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw unusable(file, err);
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

  async clear(): Promise<void> {
    this.data = {};
    await this.flush();
  }

  private flush(): Promise<void> {
    const snapshot = JSON.stringify(this.data, null, 1);
    this.writing = this.writing.then(() => writeAtomic(this.file, snapshot));
    return this.writing;
  }
}

/** The state directory cannot be read or written: say which and what to change, not just the errno. */
function unusable(file: string, err: unknown): SluiceError {
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
    throw unusable(file, err);
  }
}

async function writeDurably(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
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

export async function removeState(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
