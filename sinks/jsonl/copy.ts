/**
 * The jsonl sink's native path: a unit's raw JSONL file (gzip or not) is copied as it is — compressed input is not
 * recompressed — instead of parsing it into rows and serialising them again. Every line is still parsed on the way
 * (raw-jsonl/line.ts): a line that is not a JSON object, or one over the record size limit (raw-jsonl/lines.ts: found
 * before it is held or parsed), stops the copy. The copy always ends with a newline, so that a publish can concatenate
 * staged copies into one file (`concatFiles`) without joining two lines.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { appendFile, copyFile } from 'node:fs/promises';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip, gzipSync } from 'node:zlib';
import type { RecordCheck } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { fsyncFile } from '../../src/sink-kit/output-files/fs-durable.js';
import { isGzipFile } from '../../src/sink-kit/raw-jsonl/gzip.js';
import { checkedObjectLine } from '../../src/sink-kit/raw-jsonl/line.js';
import { JsonlLines } from '../../src/sink-kit/raw-jsonl/lines.js';

/** What a copy checks each line against, beside its being one JSON object. */
export interface CopyChecks {
  /** Observes every record's columns. */
  schema?: InferredSchema;
  /** The sink's record judge. */
  check?: RecordCheck;
  /** A longer line stops the copy (`BadJsonlLine`) before it is held or parsed (default: no limit). */
  maxLineBytes?: number;
}

/**
 * Copies `src` (gzip or not) to `dest` (gzip when `gzipLevel` is set), checking every line as `checks` says. Returns
 * the records.
 */
export async function copyCheckedJsonl(
  src: string,
  dest: string,
  gzipLevel: number | undefined,
  checks: CopyChecks = {},
): Promise<number> {
  const srcGzip = await isGzipFile(src);
  const checker = new LineChecker(checks);
  const streams: (NodeJS.ReadableStream | NodeJS.WritableStream)[] = [
    createReadStream(src, { highWaterMark: 1 << 16 }),
  ];
  if (srcGzip) streams.push(createGunzip({ chunkSize: 1 << 16 }));
  streams.push(checker);
  const sameEncoding = srcGzip === (gzipLevel !== undefined);
  if (sameEncoding) {
    await pipeline([...streams, discard()]);
    await copyFile(src, dest);
  } else {
    if (gzipLevel !== undefined) streams.push(createGzip({ level: gzipLevel, chunkSize: 1 << 16 }));
    await pipeline([...streams, createWriteStream(dest, { highWaterMark: 1 << 16 })]);
  }
  // The missing newline, as a gzip member of its own when gzip: the copied bytes stay as they are, and gunzip reads
  // the members as one stream.
  if (checker.unterminated) await appendFile(dest, gzipLevel !== undefined ? gzipSync('\n') : '\n');
  await fsyncFile(dest);
  return checker.records;
}

/** Passes bytes through unchanged; throws on a line that is not a JSON object, or is over the limit. */
class LineChecker extends Transform {
  records = 0;
  /** The last line has no newline after it (the file does not end with one); known once flushed. */
  unterminated = false;
  private readonly lines: JsonlLines;

  constructor(checks: CopyChecks) {
    super();
    this.lines = new JsonlLines(checks.maxLineBytes ?? Infinity, (buf, start, end, offset) => {
      const row = checkedObjectLine(buf, start, end, offset, checks.check);
      if (row === undefined) return;
      this.records++;
      checks.schema?.observeRow(row);
    });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      this.lines.push(chunk);
      done(null, chunk);
    } catch (err) {
      done(err as Error);
    }
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

function discard(): Writable {
  return new Writable({ write: (_c, _e, cb) => cb() });
}

/** Writes `files` one after the other into `dest`, bytes as they are (gzip members stay members). */
export async function concatFiles(files: readonly string[], dest: string): Promise<void> {
  if (files.length === 1) return copyFile(files[0]!, dest);
  await pipeline(
    async function* () {
      for (const f of files) yield* createReadStream(f, { highWaterMark: 1 << 20 });
    },
    createWriteStream(dest, { highWaterMark: 1 << 20 }),
  );
}
