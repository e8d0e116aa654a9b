/**
 * The duckdb sink's pass over a unit's JSONL file before DuckDB loads it, in one read:
 *
 * - every line is parsed and must be one JSON object (a line that is not makes this throw; the engine then
 *   decodes the file in JS, which dead-letters that record — the native path never keeps less than the JS one);
 * - the rows' schema is observed, so `read_json` gets explicit columns: with explicit columns DuckDB silently
 *   drops keys it was not told about (top level and inside structs) and converts leniently (1 → true), so only a
 *   schema learnt from every row proves that nothing is lost. Learning it natively instead
 *   (`json_group_structure` over `read_json_objects`) measured ~3× the CPU of this pass;
 * - a gzip file's decompressed bytes are written to a staging file as they go by, so the data is decompressed
 *   once (by zlib, on libuv's threads), not twice, and DuckDB's one thread only parses (see duckdb-database.ts);
 * - the longest line is measured, so DuckDB's read buffers can be sized to the data (`maximum_object_size`):
 *   its default 16 MB makes 32 MB buffers, which count against the sink's small memory limit.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream';
import { finished } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { Row } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { isGzipFile } from './jsonl-files.js';

/**
 * Bytes per read, gunzip output and staging write. Each gunzip chunk is a round trip to libuv's threads: 256 KiB
 * measured ~12% less CPU for the pass than 64 KiB (4.3 vs 4.9 CPU-s over 200k records); 1 MiB was no better.
 */
const CHUNK = 1 << 18;

export interface ScannedJsonl {
  /** The file DuckDB should read: the staging file for gzip input, the input itself otherwise. */
  path: string;
  /** Whether `path` is the staging file (the caller removes it). */
  staged: boolean;
  records: number;
  /** Bytes of the longest line. */
  longestLine: number;
}

/**
 * Scans `file` into `schema` (create it with `temporalText`); gzip input is decompressed into `stagingPath`, which
 * is removed again when the scan fails.
 */
export async function scanJsonlForDuckDB(
  file: string,
  schema: InferredSchema,
  stagingPath: string,
): Promise<ScannedJsonl> {
  const gzip = await isGzipFile(file);
  const lines = new LineScanner((row) => schema.observeRow(row));
  const source = createReadStream(file, { highWaterMark: CHUNK });
  // `pipeline` destroys both streams when either fails or the loop below stops early.
  const chunks = gzip ? pipeline(source, createGunzip({ chunkSize: CHUNK }), () => undefined) : source;
  const out = gzip ? createWriteStream(stagingPath, { highWaterMark: CHUNK }) : undefined;
  // Failures of the staging file surface through `once` and `finished` below; this keeps them from being unhandled.
  out?.on('error', () => undefined);
  try {
    for await (const chunk of chunks as AsyncIterable<Buffer>) {
      // Written before it is parsed: the write proceeds on libuv's threads while the chunk's lines are parsed.
      if (out && !out.write(chunk)) await once(out, 'drain');
      lines.push(chunk);
    }
    lines.end();
    if (out) await finished(out.end());
  } catch (err) {
    out?.destroy();
    if (out) await rm(stagingPath, { force: true });
    throw err;
  }
  return { path: gzip ? stagingPath : file, staged: gzip, records: lines.records, longestLine: lines.longest };
}

/**
 * Splits bytes into lines and parses each; blank lines are skipped (DuckDB skips them too). Lines are parsed
 * from the chunk they lie in; only a line cut by a chunk boundary is copied (concatenating each chunk onto the
 * previous remainder copies every byte once more).
 */
class LineScanner {
  records = 0;
  longest = 0;
  /** Pieces of a line that started in an earlier chunk. */
  private partial: Buffer[] = [];
  /** Byte offset of the current chunk's first byte in the file's decompressed bytes. */
  private chunkOffset = 0;
  /** Byte offset of the first line not yet complete. */
  private lineOffset = 0;

  constructor(private readonly onRow: (row: Row) => void) {}

  push(chunk: Buffer): void {
    let pos = 0;
    let nl = chunk.indexOf(10);
    if (this.partial.length > 0 && nl !== -1) {
      this.partial.push(chunk.subarray(0, nl));
      const joined = Buffer.concat(this.partial);
      this.partial = [];
      this.line(joined, 0, joined.length, this.lineOffset);
      pos = nl + 1;
      nl = chunk.indexOf(10, pos);
    }
    while (nl !== -1) {
      this.line(chunk, pos, nl, this.chunkOffset + pos);
      pos = nl + 1;
      nl = chunk.indexOf(10, pos);
    }
    if (pos < chunk.length) {
      if (this.partial.length === 0) this.lineOffset = this.chunkOffset + pos;
      this.partial.push(chunk.subarray(pos));
    }
    this.chunkOffset += chunk.length;
  }

  end(): void {
    if (this.partial.length === 0) return;
    const last = Buffer.concat(this.partial);
    this.partial = [];
    this.line(last, 0, last.length, this.lineOffset);
  }

  private line(buf: Buffer, start: number, end: number, offset: number): void {
    if (end - start > this.longest) this.longest = end - start;
    const text = buf.toString('utf8', start, end);
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      if (text.trim() === '') return;
      throw new Error(`not JSON at byte ${offset}: ${(err as Error).message}`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error(`line at byte ${offset} is not a JSON object`);
    this.records++;
    this.onRow(v as Row);
  }
}
