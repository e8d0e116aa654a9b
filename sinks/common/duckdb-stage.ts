/**
 * The duckdb sink's pass over a unit's JSONL file before DuckDB loads it, in one read:
 *
 * - every line is parsed and must be one JSON object (a line that is not makes this throw; the engine then
 *   decodes the file in JS, which dead-letters that record — the native path never keeps less than the JS one);
 * - the rows' schema is observed, so `read_json` gets explicit columns: with explicit columns DuckDB silently
 *   drops keys it was not told about (top level and inside structs) and converts leniently (1 → true), so only a
 *   schema learnt from every row proves that nothing is lost. Learning it natively instead
 *   (`json_group_structure` over `read_json_objects`) measured ~3× the CPU of this pass;
 * - a gzip file's decompressed bytes are written to a staging file as they go by: DuckDB then reads plain text,
 *   which it parses on all its threads (a gzip stream is read by one), and the data is decompressed once, not
 *   twice;
 * - the longest line is measured, so DuckDB's read buffers can be sized to the data (`maximum_object_size`):
 *   its default 16 MB makes 32 MB buffers per thread, which a low memory limit cannot hold.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createGunzip } from 'node:zlib';
import type { Row } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { isGzipFile } from './jsonl-files.js';

export interface ScannedJsonl {
  /** The file DuckDB should read: the staging file for gzip input, the input itself otherwise. */
  path: string;
  /** Whether `path` is the staging file (the caller removes it). */
  staged: boolean;
  gzip: boolean;
  records: number;
  /** Bytes of the longest line. */
  longestLine: number;
}

/** Scans `file` into `schema` (create it with `temporalText`); gzip input is decompressed into `stagingPath`. */
export async function scanJsonlForDuckDB(
  file: string,
  schema: InferredSchema,
  stagingPath: string,
): Promise<ScannedJsonl> {
  const gzip = await isGzipFile(file);
  const stage = gzip && !process.env.XP_NOSTAGE;
  const lines = new LineScanner((row) => schema.observeRow(row));
  const source = createReadStream(file, { highWaterMark: 1 << 16 });
  const out = stage ? createWriteStream(stagingPath, { highWaterMark: 1 << 16 }) : undefined;
  try {
    const chunks = gzip ? source.pipe(createGunzip({ chunkSize: 1 << 16 })) : source;
    for await (const chunk of chunks as AsyncIterable<Buffer>) {
      // Written before it is parsed: the write proceeds on libuv's threads while the chunk's lines are parsed.
      // `once` rejects if the stream fails while we wait.
      if (out && !out.write(chunk)) await once(out, 'drain');
      lines.push(chunk);
    }
    lines.end();
    if (out) {
      out.end();
      await once(out, 'close');
    }
  } catch (err) {
    source.destroy();
    out?.destroy();
    throw err;
  }
  return { path: stage ? stagingPath : file, staged: stage, gzip, records: lines.records, longestLine: lines.longest };
}

/** Splits bytes into lines and parses each; blank lines are skipped (DuckDB skips them too). */
class LineScanner {
  records = 0;
  longest = 0;
  private rest: Buffer | undefined;
  /** Byte offset of `rest` (or of the next chunk) in the file's decompressed bytes. */
  private offset = 0;

  constructor(private readonly onRow: (row: Row) => void) {}

  push(chunk: Buffer): void {
    const buf = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      this.line(buf, start, nl);
      start = nl + 1;
    }
    this.offset += start;
    // A copy: the remainder must not pin the whole 64 KiB chunk it came from.
    this.rest = start < buf.length ? Buffer.from(buf.subarray(start)) : undefined;
  }

  end(): void {
    if (this.rest) this.line(this.rest, 0, this.rest.length);
    this.rest = undefined;
  }

  private line(buf: Buffer, start: number, end: number): void {
    if (end - start > this.longest) this.longest = end - start;
    const text = buf.toString('utf8', start, end);
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      if (text.trim() === '') return;
      throw new Error(`not JSON at byte ${this.offset + start}: ${(err as Error).message}`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error(`line at byte ${this.offset + start} is not a JSON object`);
    this.records++;
    this.onRow(v as Row);
  }
}
