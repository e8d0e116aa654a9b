/**
 * The jsonl sink's native path: a unit's raw JSONL file (gzip or not) is copied as it is — compressed input is not
 * recompressed — instead of parsing it into rows and serialising them again. Every line is still parsed on the way
 * (raw-jsonl/line.ts): a line that is not a JSON object stops the copy. The copy always ends with a newline, so that
 * a publish can concatenate staged copies into one file (`concatFiles`) without joining two lines.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { appendFile, copyFile } from 'node:fs/promises';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip, gzipSync } from 'node:zlib';
import type { RecordCheck } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { fsyncFile } from '../output-files/fs-durable.js';
import { isGzipFile } from '../raw-jsonl/gzip.js';
import { checkedObjectLine } from '../raw-jsonl/line.js';

/**
 * Copies `src` (gzip or not) to `dest` (gzip when `gzipLevel` is set), checking every line (with `check`, the sink's
 * record judge, when given), and observing it into `schema` when given. Returns the records.
 */
export async function copyCheckedJsonl(
  src: string,
  dest: string,
  gzipLevel: number | undefined,
  schema?: InferredSchema,
  check?: RecordCheck,
): Promise<number> {
  const srcGzip = await isGzipFile(src);
  const checker = new LineChecker(schema, check);
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

/** Passes bytes through unchanged; throws on a line that is not a JSON object. */
class LineChecker extends Transform {
  records = 0;

  constructor(
    private readonly schema?: InferredSchema,
    private readonly judge?: RecordCheck,
  ) {
    super();
  }

  private rest: Buffer | undefined;
  private offset = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      let buf = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
        this.check(buf, start, nl);
        start = nl + 1;
      }
      this.offset += start;
      buf = buf.subarray(start);
      this.rest = buf.length > 0 ? Buffer.from(buf) : undefined;
      done(null, chunk);
    } catch (err) {
      done(err as Error);
    }
  }

  /** The last line has no newline after it (the file does not end with one); known once flushed. */
  unterminated = false;

  override _flush(done: TransformCallback): void {
    try {
      this.unterminated = this.rest !== undefined;
      if (this.rest) this.check(this.rest, 0, this.rest.length);
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  private check(buf: Buffer, start: number, end: number): void {
    const row = checkedObjectLine(buf, start, end, this.offset + start, this.judge);
    if (row === undefined) return;
    this.records++;
    this.schema?.observeRow(row);
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
