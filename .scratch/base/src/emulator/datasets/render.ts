/**
 * Snapshot bodies, generated as they are sent: records are rendered into ~64 KiB chunks by a generator, so a
 * million-record download holds one chunk at a time (plus the socket's buffer) and pauses when the socket does.
 *
 * - `jsonl`: one JSON object per line.
 * - `json`: one JSON array (each part of a batched download is a complete array of its own).
 * - `csv`: a header row of the dataset's fields, then one row per record; nested values (objects, arrays) as
 *   JSON text, null as an empty cell, an empty string as `""` so it stays distinct from null; RFC 4180 quoting.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGzip } from 'node:zlib';

export type SnapshotFormat = 'json' | 'jsonl' | 'csv';

/** Chunks are cut once this full; each record is written straight into the chunk (no string concatenation). */
const CHUNK_BYTES = 64 * 1024;

export const CONTENT_TYPES: Record<SnapshotFormat, string> = {
  jsonl: 'application/jsonl',
  json: 'application/json',
  csv: 'text/csv; charset=utf-8',
};

/** The body bytes of `records` in `format`, in chunks of about 64 KiB. */
export function* renderRecords(
  records: Iterable<Record<string, unknown>>,
  format: SnapshotFormat,
  columns: readonly string[],
): Generator<Buffer> {
  const out = new ChunkWriter();
  if (format === 'json') out.text('[');
  else if (format === 'csv') out.text(columns.map(csvCell).join(',') + '\n');
  let first = true;
  for (const rec of records) {
    if (format === 'jsonl') {
      out.text(JSON.stringify(rec));
      out.newline();
    } else if (format === 'json') {
      out.text((first ? '\n' : ',\n') + JSON.stringify(rec));
      first = false;
    } else out.text(csvRow(rec, columns));
    if (out.size >= CHUNK_BYTES) yield out.take();
  }
  if (format === 'json') out.text(first ? ']\n' : '\n]\n');
  if (out.size > 0) yield out.take();
}

/**
 * UTF-8 text appended into one reused buffer; `take()` hands over an exact-size copy, so the chunks in flight
 * (socket and gzip queues) hold no slack.
 */
class ChunkWriter {
  private buf = Buffer.allocUnsafe(2 * CHUNK_BYTES);
  size = 0;

  text(s: string): void {
    // A UTF-16 code unit is at most 3 UTF-8 bytes.
    if (this.size + s.length * 3 > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * CHUNK_BYTES, this.size + s.length * 3));
      this.buf.copy(grown, 0, 0, this.size);
      this.buf = grown;
    }
    this.size += this.buf.write(s, this.size);
  }

  newline(): void {
    if (this.size === this.buf.length) this.text('\n');
    else this.buf[this.size++] = 10;
  }

  take(): Buffer {
    const chunk = Buffer.allocUnsafe(this.size);
    this.buf.copy(chunk, 0, 0, this.size);
    this.size = 0;
    return chunk;
  }
}

function csvRow(rec: Record<string, unknown>, columns: readonly string[]): string {
  let line = '';
  for (let k = 0; k < columns.length; k++) {
    if (k > 0) line += ',';
    line += csvCell(rec[columns[k] as string]);
  }
  return line + '\n';
}

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (text === '') return '""';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // " , \n \r
    if (c === 34 || c === 44 || c === 10 || c === 13) return `"${text.replaceAll('"', '""')}"`;
  }
  return text;
}

/**
 * The body as a stream, gzip-compressed when asked. Level 1: the emulator must feed a client faster than the
 * client decodes, and gzip's default level compresses at a fraction of that speed. Destroying the returned stream
 * (a client that went away) stops the generator.
 */
export function bodyStream(chunks: Iterable<Buffer>, gzip: boolean): Readable {
  const source = Readable.from(chunks, { objectMode: false });
  if (!gzip) return source;
  const gz = createGzip({ level: constants.Z_BEST_SPEED, chunkSize: 64 * 1024 });
  pipeline(source, gz).catch(() => undefined);
  return gz;
}
