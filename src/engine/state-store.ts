/**
 * The run's durable state: one JSON file written by temp-file + fsync + rename, so a crash leaves either the old or
 * the new state, never half of one. `set` resolves only when the bytes are on disk: sources checkpoint paid job ids
 * here *before* waiting on them.
 */
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
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
    try {
      data = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
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

async function writeAtomic(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
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
