/**
 * The jsonl sink's native path: a unit's raw JSONL file (gzip or not) is copied as it is — compressed input is not
 * recompressed — instead of parsing it into rows and serialising them again. Every line is still parsed on the way
 * (raw-jsonl/line.ts): a line that is not a JSON object stops the copy.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { fsyncFile } from '../output-files/fs-durable.js';
import { isGzipFile } from '../raw-jsonl/gzip.js';
import { parseObjectLine } from '../raw-jsonl/line.js';

/** Copies `src` (gzip or not) to `dest` (gzip when `gzipLevel` is set), checking every line. Returns the records. */
export async function copyCheckedJsonl(src: string, dest: string, gzipLevel: number | undefined): Promise<number> {
  const srcGzip = await isGzipFile(src);
  const checker = new LineChecker();
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
  await fsyncFile(dest);
  return checker.records;
}

/** Passes bytes through unchanged; throws on a line that is not a JSON object. */
class LineChecker extends Transform {
  records = 0;

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

  override _flush(done: TransformCallback): void {
    try {
      if (this.rest) this.check(this.rest, 0, this.rest.length);
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  private check(buf: Buffer, start: number, end: number): void {
    if (parseObjectLine(buf, start, end, this.offset + start) !== undefined) this.records++;
  }
}

function discard(): Writable {
  return new Writable({ write: (_c, _e, cb) => cb() });
}
