/**
 * The JS floor every JSON-reading path is measured against: gunzip (node zlib, 64 KiB chunks; the 16 KiB default
 * is ~1.5× slower), split on newline bytes, `JSON.parse` per line — no decoder, no dead letters, nothing else.
 * Also the minimal row source of the sink benchmarks.
 */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import type { Batch, Row } from '../../src/core/types.js';
import { parseIsoTimestamp } from '../../src/core/values.js';

/**
 * The parsed lines of a JSONL file (gunzipped when its name ends in `.gz`), a chunk's worth at a time. Lines are
 * parsed from the chunk they lie in; only a line cut by a chunk boundary is copied.
 */
export async function* jsonlChunks(file: string): AsyncGenerator<Row[]> {
  const source = createReadStream(file, { highWaterMark: 1 << 16 });
  const input = file.endsWith('.gz') ? source.pipe(createGunzip({ chunkSize: 1 << 16 })) : source;
  let partial: Buffer[] = [];
  for await (const chunk of input as AsyncIterable<Buffer>) {
    const rows: Row[] = [];
    let pos = 0;
    let nl = chunk.indexOf(10);
    if (partial.length > 0 && nl !== -1) {
      partial.push(chunk.subarray(0, nl));
      rows.push(JSON.parse(Buffer.concat(partial).toString('utf8')) as Row);
      partial = [];
      pos = nl + 1;
      nl = chunk.indexOf(10, pos);
    }
    for (; nl !== -1; pos = nl + 1, nl = chunk.indexOf(10, pos))
      if (nl > pos) rows.push(JSON.parse(chunk.toString('utf8', pos, nl)) as Row);
    if (pos < chunk.length) partial.push(chunk.subarray(pos));
    yield rows;
  }
  if (partial.length > 0) yield [JSON.parse(Buffer.concat(partial).toString('utf8')) as Row];
}

/** Lines of a JSONL file (gunzipped when its name ends in `.gz`), split but not parsed: the floor of a byte copy. */
export async function countLines(file: string): Promise<number> {
  const source = createReadStream(file, { highWaterMark: 1 << 16 });
  const input = file.endsWith('.gz') ? source.pipe(createGunzip({ chunkSize: 1 << 16 })) : source;
  let n = 0;
  let last = 10;
  for await (const chunk of input as AsyncIterable<Buffer>) {
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, nl + 1)) n++;
    if (chunk.length > 0) last = chunk[chunk.length - 1]!;
  }
  // A last line without its newline is a line too.
  return last === 10 ? n : n + 1;
}

/** Records of a JSONL file, parsed and dropped. */
export async function countJsonl(file: string): Promise<number> {
  let n = 0;
  for await (const rows of jsonlChunks(file)) n += rows.length;
  return n;
}

/** Rows of a JSONL file in batches of `batchSize`, for the sink benchmarks' routes. */
export async function* parseJsonlFile(file: string, batchSize = 1000): AsyncGenerator<Batch> {
  let batch: Row[] = [];
  for await (const rows of jsonlChunks(file)) {
    for (const r of rows) batch.push(r);
    if (batch.length >= batchSize) {
      yield batch;
      batch = [];
    }
  }
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
