/**
 * Dead letters go to one JSONL file per pipeline, appended as they happen (nothing is held back in memory, so a
 * crash loses none). A unit that is retried may reject the same record twice; readers de-duplicate by the letter's
 * key (run, unit, stage, offset or ordinal, reason), which is why each line carries all of them.
 *
 * A letter keeps the record's whole text up to `MAX_RAW`: `sluice dead-letters --replay` parses it again, so a
 * letter cut short could not be replayed (it says so with `truncated`).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { makePrivate, PRIVATE_DIR, PRIVATE_FILE } from '../core/private-files.js';
import { redact } from '../core/redact.js';
import type { DeadLetter } from '../core/types.js';
import { readTextIfPresent } from '../core/json-file.js';

/** Characters of a record kept in its letter (records are rarely near this; letters are few). */
export const MAX_RAW = 1 << 20;

/** What the engine adds to a component's letter: where in the pipeline it was rejected. */
export interface LetterContext {
  /** Index in `transforms` of the transform that rejected the record; absent for decode letters. */
  step?: number;
  /** The record's ordinal among the letters of this step in this unit, for letters without a byte offset. */
  index?: number;
  /** The unit's params (query, page, fetch time…): normalizers read them again on replay. */
  unit_params?: Record<string, unknown>;
}

export interface StoredDeadLetter extends DeadLetter, LetterContext {
  run: string;
  at: string;
  /** `raw` holds only the first MAX_RAW characters of the record. */
  truncated?: boolean;
}

export class DeadLetterFile {
  private stream: WriteStream | undefined;
  /** A write that failed after open (disk full): reported by close(). */
  private failed: Error | undefined;
  count = 0;

  constructor(
    readonly file: string,
    private readonly run: string,
  ) {}

  async open(): Promise<void> {
    try {
      await mkdir(path.dirname(this.file), { recursive: true, mode: PRIVATE_DIR });
      // Created (or found writable) now: a stream would only say so later, in an 'error' nobody awaits.
      await appendFile(this.file, '', { mode: PRIVATE_FILE });
      // Raw records are the user's alone: a file an older version created readable by all is made private.
      await makePrivate(this.file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      throw new SluiceError(`cannot write the dead-letter file ${this.file} (${code})`, {
        hint:
          code === 'EISDIR'
            ? 'set `dead_letter` to a file path (relative to the pipeline file), not a directory'
            : code === 'ENOTDIR' || code === 'EEXIST'
              ? 'a file is in the way of its directory: move it, or set `dead_letter` (or `state_dir`) elsewhere'
              : 'give the user running sluice write access there, or set `dead_letter` to a writable path',
        cause: err,
      });
    }
    const stream = createWriteStream(this.file, { flags: 'a', mode: PRIVATE_FILE });
    stream.on('error', (err) => (this.failed ??= err));
    this.stream = stream;
  }

  write(d: DeadLetter & LetterContext): void {
    this.count++;
    const cut = d.raw !== undefined && d.raw.length > MAX_RAW;
    const line: StoredDeadLetter = {
      ...d,
      ...(d.raw !== undefined && { raw: cut ? d.raw.slice(0, MAX_RAW) : d.raw }),
      ...(cut && { truncated: true }),
      run: this.run,
      at: new Date().toISOString(),
    };
    this.stream?.write(redact(JSON.stringify(line)) + '\n');
  }

  async close(): Promise<void> {
    const s = this.stream;
    if (!s) return;
    // An error while ending is recorded by the 'error' listener; either way the stream is done.
    if (!this.failed)
      await new Promise<void>((resolve) => {
        s.once('error', () => resolve());
        s.end(() => resolve());
      });
    if (this.failed)
      throw new SluiceError(`writing the dead-letter file ${this.file} failed: ${this.failed.message}`, {
        hint: 'some dead letters of this run are missing from it: free disk space or fix the path; `sluice run --fresh` reads every unit again',
        cause: this.failed,
      });
  }
}

/**
 * Identifies a rejected record: the same record rejected again by a retried attempt of its unit has the same key;
 * a record of another run (a crawl's unit ids repeat every night) does not.
 */
export function deadLetterKey(d: DeadLetter & { run?: string; index?: number }): string {
  return JSON.stringify([d.run ?? null, d.unit, d.stage, d.offset ?? null, d.index ?? null, d.reason]);
}

/** All dead letters of a pipeline, de-duplicated, oldest first. */
export async function readDeadLetters(file: string): Promise<StoredDeadLetter[]> {
  const text = await readTextIfPresent(file);
  if (text === undefined) return [];
  const seen = new Set<string>();
  const out: StoredDeadLetter[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let d: StoredDeadLetter;
    try {
      d = JSON.parse(line) as StoredDeadLetter;
    } catch {
      continue; // a line cut by a crash mid-write: the record it described is re-rejected on the rerun
    }
    const key = deadLetterKey(d);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}
