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
import type { Batch, Row } from '../../core/types.js';
import type { InferredSchema } from '../../schema/infer.js';
import { fsyncFile } from './fs-durable.js';

export interface NdjsonResult {
  rows: number;
  /** Size on disk (compressed when gzip). */
  bytes: number;
  /**
   * Bytes of the longest line (newline excluded), exact when over `LONG_LINE` (DuckDB's read buffers are sized to
   * it: a line longer than its `maximum_object_size` fails the read); shorter lines count as `LONG_LINE`.
   */
  longestLine: number;
}

/** Lines up to this many bytes need no exact measure: DuckDB reads them with its smallest buffer (1 MB). */
export const LONG_LINE = 1 << 20;
/** Characters of lines joined into one write: a string a few MB long, never near V8's limit (2^29). */
const CHUNK_CHARS = 8 << 20;

export interface NdjsonOptions {
  /** gzip at this level (1–9); plain text when undefined. */
  gzipLevel?: number;
  /** Observes every row written. */
  schema?: InferredSchema;
  /** fsync before returning (committed data must survive a power cut; DuckDB staging files need not). */
  sync?: boolean;
  /** Add the lines after the file's bytes (a spool of several units) rather than replace them. */
  append?: boolean;
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
  const longest = { bytes: LONG_LINE };
  const schema = opts.schema;
  const keys = opts.keys && opts.keys.length > 0 ? opts.keys : undefined;
  async function* lines(): AsyncGenerator<string> {
    for await (const batch of batches) {
      if (batch.length === 0) continue;
      schema?.observe(batch);
      rows += batch.length;
      yield* ndjsonChunks(keys ? withKeys(batch, keys) : batch, longest);
    }
  }
  const out = createWriteStream(file, { highWaterMark: 1 << 16, ...(opts.append && { flags: 'a' }) });
  if (opts.gzipLevel !== undefined)
    await pipeline(Readable.from(lines()), createGzip({ level: opts.gzipLevel, chunkSize: 1 << 16 }), out);
  else await pipeline(Readable.from(lines()), out);
  if (opts.sync) await fsyncFile(file);
  return { rows, bytes: (await stat(file)).size, longestLine: longest.bytes };
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

/**
 * One JSON text per row, each followed by a newline, joined into strings of a few MB; `longest.bytes` grows to the
 * longest line over `LONG_LINE` bytes.
 */
function* ndjsonChunks(batch: Batch, longest: { bytes: number }): Generator<string> {
  let s = '';
  for (let i = 0; i < batch.length; i++) {
    const line = stringifyRow(batch[i]!);
    // A UTF-8 byte is at most 3 per UTF-16 unit: only lines that may be long are measured.
    if (line.length * 3 > longest.bytes) longest.bytes = Math.max(longest.bytes, Buffer.byteLength(line));
    if (s.length + line.length > CHUNK_CHARS && s.length > 0) {
      yield s;
      s = '';
    }
    s += line + '\n';
  }
  if (s.length > 0) yield s;
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
