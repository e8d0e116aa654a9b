/**
 * s3rver's filesystem store writes an object in place (truncating the file it then fills) and answers the PUT once
 * the body has been read, not once it is on disk; its metadata (the length a GET reads up to) is written after. Two
 * PUTs of one key at once leave a torn object — the shorter body over the head of the longer — and a GET beside a PUT
 * can read a mix. S3 itself is atomic per object and read-after-write consistent, and so is this store once patched:
 * each PUT fills a file of its own, then, under one lock with the GETs' opening, renames it into place and writes its
 * metadata; a GET opens either the whole old object or the whole new one.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** The part of s3rver's FilesystemStore patched here (lib/stores/filesystem.js). */
export interface S3rverStore {
  getResourcePath(bucket: string, key?: string, resource?: string): string;
  putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
  getObject(bucket: string, key: string, options?: unknown): Promise<unknown>;
  putObject(object: S3rverObject): Promise<{ size: number; md5: string }>;
}

interface S3rverObject {
  bucket: string;
  key: string;
  content: Buffer | NodeJS.ReadableStream;
  metadata: unknown;
}

/** Patches `store`; returns the cleanup of its staging directory (beside, not inside, the store's buckets). */
export async function atomicPuts(store: S3rverStore): Promise<() => Promise<void>> {
  const staging = await mkdtemp(path.join(tmpdir(), 'sluice-s3rver-puts-'));
  let last: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(step: () => Promise<T>): Promise<T> => {
    const run = last.then(step, step);
    last = run.catch(() => undefined);
    return run;
  };
  const getObject = store.getObject.bind(store);
  // The metadata read and the file's opening together: an open file keeps its content through a later rename.
  store.getObject = (bucket, key, options) => exclusive(() => getObject(bucket, key, options));
  store.putObject = async (object) => {
    const target = store.getResourcePath(object.bucket, object.key, 'object');
    const temp = path.join(staging, randomUUID());
    const md5 = createHash('md5');
    let size = 0;
    const content = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
    try {
      await pipeline(
        content,
        new Transform({
          transform(chunk: Buffer, _encoding, done) {
            md5.update(chunk);
            size += chunk.length;
            done(null, chunk);
          },
        }),
        createWriteStream(temp),
      );
      const digest = md5.digest('hex');
      await mkdir(path.dirname(target), { recursive: true });
      await exclusive(async () => {
        await rename(temp, target);
        await store.putMetadata(object.bucket, object.key, object.metadata, digest);
      });
      return { size, md5: digest };
    } finally {
      await rm(temp, { force: true });
    }
  };
  return () => rm(staging, { recursive: true, force: true });
}
