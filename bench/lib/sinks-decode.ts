/**
 * A minimal JSONL decoder for the sink benchmarks (the engine's own lives in src/decode): gunzip with 64 KiB
 * chunks, split on newline bytes, JSON.parse — the "JS floor" the sinks are measured against.
 */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import type { Batch, Row } from '../../src/core/types.js';
import { parseIsoTimestamp } from '../../src/core/values.js';

export async function* decodeJsonlGz(file: string, batchSize = 1000): AsyncGenerator<Batch> {
  const input = createReadStream(file, { highWaterMark: 1 << 16 }).pipe(createGunzip({ chunkSize: 1 << 16 }));
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

/** What the company-profile normalizer does to timestamps, so typed sinks see `Date`s. */
export async function* withTimestamps(batches: AsyncIterable<Batch>): AsyncGenerator<Batch> {
  for await (const b of batches) {
    for (const r of b) {
      r.timestamp = parseIsoTimestamp(r.timestamp);
      const f = r.funding as Row | null;
      if (f) f.last_round_date = parseIsoTimestamp(f.last_round_date);
      for (const u of (r.updates as Row[] | null) ?? []) u.date = parseIsoTimestamp(u.date);
    }
    yield b;
  }
}
