/**
 * The JS floor every JSON-reading path is measured against: gunzip (node zlib, 64 KiB chunks; the 16 KiB default
 * is ~1.5× slower), split on newline bytes, `JSON.parse` per line — no decoder, no dead letters, nothing else.
 * Also the minimal row source of the sink benchmarks.
 */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import type { Batch, Row } from '../../src/core/types.js';
import { parseIsoTimestamp } from '../../src/core/values.js';

/** Rows of a JSONL file, gunzipped when its name ends in `.gz`, in batches of `batchSize`. */
export async function* parseJsonlFile(file: string, batchSize = 1000): AsyncGenerator<Batch> {
  const source = createReadStream(file, { highWaterMark: 1 << 16 });
  const input = file.endsWith('.gz') ? source.pipe(createGunzip({ chunkSize: 1 << 16 })) : source;
  let rest: Buffer | undefined;
  let batch: Row[] = [];
  for await (const chunk of input as AsyncIterable<Buffer>) {
    const buf = rest ? Buffer.concat([rest, chunk]) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      if (nl > start) batch.push(JSON.parse(buf.toString('utf8', start, nl)) as Row);
      start = nl + 1;
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    rest = start < buf.length ? buf.subarray(start) : undefined;
  }
  if (rest && rest.length > 0) batch.push(JSON.parse(rest.toString('utf8')) as Row);
  if (batch.length > 0) yield batch;
}

export async function countBatches(batches: AsyncIterable<Batch>): Promise<number> {
  let n = 0;
  for await (const b of batches) n += b.length;
  return n;
}

/** What the company-profile normalizer does to timestamps, so typed sinks see `Date`s as in production. */
export async function* withTimestamps(batches: AsyncIterable<Batch>): AsyncGenerator<Batch> {
  for await (const b of batches) {
    for (const r of b) {
      if (typeof r.timestamp === 'string') r.timestamp = parseIsoTimestamp(r.timestamp);
      const f = r.funding as Row | null;
      if (f && typeof f.last_round_date === 'string') f.last_round_date = parseIsoTimestamp(f.last_round_date);
    }
    yield b;
  }
}
