/**
 * Dead letters go to one JSONL file per pipeline, appended as they happen (nothing is held back in memory, so a
 * crash loses none). A unit that is retried may reject the same record twice; readers de-duplicate by
 * (unit, stage, offset, reason), which is why each line carries all four.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { redact } from '../core/redact.js';
import type { DeadLetter } from '../core/types.js';

const MAX_RAW = 4096;

export interface StoredDeadLetter extends DeadLetter {
  run: string;
  at: string;
}

export class DeadLetterFile {
  private stream: WriteStream | undefined;
  count = 0;

  constructor(
    readonly file: string,
    private readonly run: string,
  ) {}

  async open(): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    this.stream = createWriteStream(this.file, { flags: 'a' });
  }

  write(d: DeadLetter): void {
    this.count++;
    const raw = d.raw === undefined ? undefined : d.raw.length > MAX_RAW ? d.raw.slice(0, MAX_RAW) + '…' : d.raw;
    const line: StoredDeadLetter = { ...d, raw, run: this.run, at: new Date().toISOString() };
    this.stream?.write(redact(JSON.stringify(line)) + '\n');
  }

  async close(): Promise<void> {
    const s = this.stream;
    if (!s) return;
    await new Promise<void>((resolve, reject) => s.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
}

export function deadLetterKey(d: DeadLetter): string {
  return JSON.stringify([d.unit, d.stage, d.offset ?? null, d.reason]);
}

/** All dead letters of a pipeline, de-duplicated, oldest first. */
export async function readDeadLetters(file: string): Promise<StoredDeadLetter[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
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
