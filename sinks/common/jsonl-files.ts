/**
 * Local JSONL files (gzip or not) as the sinks' native paths see them. Every line is parsed and must be one JSON
 * object; a line that is not makes these throw, and the engine then decodes the file in JS, which sends that
 * record to the dead letters — the native paths never keep less, or more, than the JS path would.
 *
 * - `copyCheckedJsonl` (jsonl sink): the bytes are copied as they are — compressed input is not recompressed —
 *   instead of serialising parsed rows again.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, open } from 'node:fs/promises';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { fsyncFile } from './fs-durable.js';

export async function isGzipFile(file: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { bytesRead, buffer } = await fh.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

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
    const text = buf.toString('utf8', start, end);
    if (text.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      throw new Error(`not JSON at byte ${this.offset + start}: ${(err as Error).message}`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error(`line at byte ${this.offset + start} is not a JSON object`);
    this.records++;
  }
}

function discard(): Writable {
  return new Writable({ write: (_c, _e, cb) => cb() });
}
