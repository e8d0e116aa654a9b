/**
 * A raw JSONL file (gzip or not) copied with every line checked on the way (raw-jsonl/line.ts): the jsonl sink's
 * native path (its output is the file's bytes, recompressed only when the encoding differs) and the Parquet sink's
 * (the unit staged as plain text for DuckDB's reader). A line that is not a JSON object, or one over the record size
 * limit (raw-jsonl/lines.ts: found before it is held or parsed), or a record the sink's judge refuses, stops the copy.
 * The copy always ends with a newline, so that copies can be joined into one file without joining two lines.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { appendFile, copyFile, open } from 'node:fs/promises';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import type { RecordCheck } from '../../core/types.js';
import type { InferredSchema } from '../../schema/infer.js';
import { fsyncFile } from '../output-files/fs-durable.js';
import { gunzipFile, isGzipFile } from './gzip.js';
import { checkedObjectLine } from './line.js';
import { JsonlLines } from './lines.js';

/**
 * Bytes per read and per gunzip output chunk: each gunzip chunk is a round trip to libuv's threads, and 256 KiB
 * chunks cost the DuckDB sink's staging scan ~12% less CPU than 64 KiB (sinks/duckdb/stage.ts).
 */
const CHUNK = 1 << 18;

/** What a copy checks each line against, beside its being one JSON object. */
export interface CopyChecks {
  /** Observes every record's columns. */
  schema?: InferredSchema;
  /** The sink's record judge. */
  check?: RecordCheck;
  /** A longer line stops the copy (`BadJsonlLine`) before it is held or parsed (default: no limit). */
  maxLineBytes?: number;
}

/** What a checked copy found: the records, and the bytes of the longest line. */
export interface CheckedCopy {
  records: number;
  longest: number;
}

/**
 * Copies `src` (gzip or not) to `dest` (gzip when `gzipLevel` is set), checking every line as `checks` says, and
 * syncs it. `append`: the copy goes after `dest`'s bytes (a spool of several units) instead of replacing them.
 */
export async function copyCheckedJsonl(
  src: string,
  dest: string,
  gzipLevel: number | undefined,
  checks: CopyChecks = {},
  append = false,
): Promise<CheckedCopy> {
  const flags = append ? 'a' : 'w';
  const srcGzip = await isGzipFile(src);
  const checker = new LineChecker(checks);
  const streams: (NodeJS.ReadableStream | NodeJS.WritableStream)[] = [
    srcGzip ? gunzipFile(src, CHUNK) : createReadStream(src, { highWaterMark: CHUNK }),
    checker,
  ];
  const sameEncoding = srcGzip === (gzipLevel !== undefined);
  if (sameEncoding) {
    await pipeline([...streams, discard()]);
    if (append) await writeSynced(dest, flags, [createReadStream(src, { highWaterMark: CHUNK })]);
    else {
      await copyFile(src, dest);
      await fsyncFile(dest);
    }
  } else {
    if (gzipLevel !== undefined) streams.push(createGzip({ level: gzipLevel, chunkSize: 1 << 16 }));
    await writeSynced(dest, flags, streams);
  }
  // The missing newline, as a gzip member of its own when gzip: the copied bytes stay as they are, and gunzip reads
  // the members as one stream.
  if (checker.unterminated) {
    await appendFile(dest, gzipLevel !== undefined ? gzipSync('\n') : '\n');
    await fsyncFile(dest);
  }
  return { records: checker.records, longest: checker.longest };
}

/** Passes bytes through unchanged; throws on a line that is not a JSON object, or is over the limit. */
class LineChecker extends Transform {
  records = 0;
  longest = 0;
  /** The last line has no newline after it (the file does not end with one); known once flushed. */
  unterminated = false;
  private readonly lines: JsonlLines;

  constructor(checks: CopyChecks) {
    super();
    this.lines = new JsonlLines(checks.maxLineBytes ?? Infinity, (buf, start, end, offset) => {
      if (end - start > this.longest) this.longest = end - start;
      const row = checkedObjectLine(buf, start, end, offset, checks.check);
      if (row === undefined) return;
      this.records++;
      checks.schema?.observeRow(row);
    });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    // Checked once the current callback has returned: gunzip hands a chunk over inside zlib's callback, which puts
    // the next chunk's inflating on libuv's threads only after that, so checking it at once made the two take turns
    // (the floor's `for await` overlaps them).
    queueMicrotask(() => {
      try {
        this.lines.push(chunk);
        done(null, chunk);
      } catch (err) {
        done(err as Error);
      }
    });
  }

  override _flush(done: TransformCallback): void {
    try {
      this.unterminated = this.lines.end();
      done();
    } catch (err) {
      done(err as Error);
    }
  }
}

/**
 * Bytes written between two early syncs of a copy's output. The final fsync waited for all of a unit's pages (a
 * tenth of the JSONL copy's time); synced along the way, on libuv's threads, they reach the disk while the copy
 * goes on parsing.
 */
const SYNC_AHEAD = 8 << 20;

/**
 * Bytes per write of a copy's output, joined from the chunks that pass: each write is a round trip to libuv's
 * threads, measured at 0.14 s of a JSONL copy worker's 2 s one write per 256 KiB chunk, 0.05 s at 1 MiB.
 */
const WRITE_BYTES = 1 << 20;

/**
 * `streams` piped into `dest` (opened with `flags`), `WRITE_BYTES` per write, and synced: every `SYNC_AHEAD` bytes a
 * datasync is started without waiting for it, then all of them and a last fsync are waited for — through one handle
 * opened before the first write, so that a write-back error an early sync met is this copy's failure too.
 */
async function writeSynced(
  dest: string,
  flags: string,
  streams: (NodeJS.ReadableStream | NodeJS.WritableStream)[],
): Promise<void> {
  // Created when missing, never cut: the write stream's own flags decide that.
  const syncing = await open(dest, 'a');
  try {
    const syncs: Promise<void>[] = [];
    let since = 0;
    let held: Buffer[] = [];
    let heldBytes = 0;
    const writes = new Transform({
      transform(chunk: Buffer, _enc, done) {
        since += chunk.length;
        if (since >= SYNC_AHEAD) {
          since = 0;
          const sync = syncing.datasync();
          sync.catch(() => undefined); // waited for below
          syncs.push(sync);
        }
        held.push(chunk);
        heldBytes += chunk.length;
        if (heldBytes < WRITE_BYTES) return done();
        const joined = Buffer.concat(held, heldBytes);
        held = [];
        heldBytes = 0;
        done(null, joined);
      },
      flush(done) {
        done(null, heldBytes > 0 ? Buffer.concat(held, heldBytes) : undefined);
      },
    });
    await pipeline([...streams, writes, createWriteStream(dest, { flags, highWaterMark: WRITE_BYTES })]);
    await Promise.all(syncs);
    await syncing.sync();
  } finally {
    await syncing.close();
  }
}

function discard(): Writable {
  return new Writable({ write: (_c, _e, cb) => cb() });
}
