/**
 * Rows → newline-delimited JSON on disk (optionally gzip), observing the schema on the way. This is both the JSONL
 * sink's output and the staging file DuckDB loads with `read_json`: `JSON.stringify` is the fastest way out of
 * V8 for nested rows (columnar DataChunks through the appender measured no faster and need per-type converters),
 * and `Date` / `DateOnly` already serialise as ISO 8601 text through `toJSON`.
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Batch, Row } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { fsyncFile } from './fs-durable.js';

export interface NdjsonResult {
  rows: number;
  /** Size on disk (compressed when gzip). */
  bytes: number;
}

export interface NdjsonOptions {
  /** gzip at this level (1–9); plain text when undefined. */
  gzipLevel?: number;
  /** Observes every row written. */
  schema?: InferredSchema;
  /** fsync before returning (committed data must survive a power cut; DuckDB staging files need not). */
  sync?: boolean;
  /**
   * Keys every line has, first and in this order (a declared schema's columns): an absent or undefined value is
   * written as null, so every line of the output has the same declared keys. Other keys follow as they come.
   */
  keys?: readonly string[];
}

export async function writeNdjson(
  batches: AsyncIterable<Batch>,
  file: string,
  opts: NdjsonOptions = {},
): Promise<NdjsonResult> {
  let rows = 0;
  const schema = opts.schema;
  const keys = opts.keys && opts.keys.length > 0 ? opts.keys : undefined;
  async function* lines(): AsyncGenerator<string> {
    for await (const batch of batches) {
      if (batch.length === 0) continue;
      schema?.observe(batch);
      rows += batch.length;
      yield ndjsonLines(keys ? withKeys(batch, keys) : batch);
    }
  }
  const out = createWriteStream(file, { highWaterMark: 1 << 16 });
  if (opts.gzipLevel !== undefined)
    await pipeline(Readable.from(lines()), createGzip({ level: opts.gzipLevel, chunkSize: 1 << 16 }), out);
  else await pipeline(Readable.from(lines()), out);
  if (opts.sync) await fsyncFile(file);
  return { rows, bytes: (await stat(file)).size };
}

/** The batch's rows with `keys` first, null where absent. */
function withKeys(batch: Batch, keys: readonly string[]): Batch {
  const out: Batch = new Array<Row>(batch.length);
  for (let i = 0; i < batch.length; i++) {
    const row = batch[i]!;
    const o: Row = {};
    for (const k of keys) o[k] = row[k] ?? null;
    for (const k in row) if (!(k in o)) o[k] = row[k];
    out[i] = o;
  }
  return out;
}

/** One JSON text per row, each followed by a newline. */
export function ndjsonLines(batch: Batch): string {
  let s = '';
  for (let i = 0; i < batch.length; i++) s += stringifyRow(batch[i]!) + '\n';
  return s;
}

function stringifyRow(row: Row): string {
  try {
    return JSON.stringify(row);
  } catch (err) {
    // JSON.stringify refuses JS bigints: they are written as decimal text, which read_json casts into the BIGINT
    // column. Only rows that hold one pay for the replacer.
    if (err instanceof TypeError && /BigInt/i.test(err.message)) return JSON.stringify(row, bigintAsNumber);
    throw err;
  }
}

function bigintAsNumber(_key: string, v: unknown): unknown {
  return typeof v === 'bigint' ? v.toString() : v;
}
