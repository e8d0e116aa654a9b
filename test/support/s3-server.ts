/**
 * A real S3-compatible server for the tests (s3rver: an S3 REST API over a local directory), on 127.0.0.1 at a
 * random port, and a client for it configured as sluice's sinks configure theirs.
 *
 * s3rver stores multipart uploads but implements neither AbortMultipartUpload nor ListMultipartUploads, and takes
 * parts for any UploadId. The server here adds what S3 does for the first and the last — abort deletes the upload
 * and its parts; a part or an abort for an upload that is not there is `NoSuchUpload` — and leaves the listing
 * unimplemented, as some S3-compatible stores do: the sinks must find their incomplete uploads without it.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { s3Client, S3Store } from '../../src/sink-kit/output-files/s3.js';
import { atomicPuts, type S3rverStore } from './s3rver-atomic-puts.js';

/** The part of Koa's context the multipart additions use. */
interface KoaContext {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
  type: string;
}
type KoaMiddleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
  /** Koa's middleware stack (s3rver is a Koa application). */
  middleware: KoaMiddleware[];
  store: S3rverStore;
}
type S3rverCtor = new (opts: { port: number; address: string; silent: boolean; directory: string }) => S3rverInstance;

export interface S3TestServer {
  endpoint: string;
  client: S3Client;
  /** The environment a `sluice` child process needs to reach the server. */
  env: Record<string, string>;
  createBucket(name: string): Promise<void>;
  /** Every key under `prefix` (sorted). */
  keys(bucket: string, prefix?: string): Promise<string[]>;
  get(bucket: string, key: string): Promise<Buffer>;
  /** The UploadIds of the multipart uploads the server holds (started, neither completed nor aborted). */
  uploads(bucket: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** Where s3rver's filesystem store keeps a bucket's multipart uploads, one directory per UploadId. */
const uploadsDir = (root: string, bucket: string): string => path.join(root, bucket, '._S3rver_uploads');

function noSuchUpload(ctx: KoaContext, uploadId: string): void {
  ctx.status = 404;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist: ${uploadId}</Message></Error>`;
}

/** AbortMultipartUpload, and NoSuchUpload for parts of an upload that is not there (see the header). */
function multipartAdditions(root: string): KoaMiddleware {
  return async (ctx, next) => {
    const uploadId = ctx.query.uploadId;
    const bucket = ctx.path.split('/')[1];
    if (typeof uploadId !== 'string' || !bucket || !/^[0-9a-f]+$/.test(uploadId)) return next();
    const dir = path.join(uploadsDir(root, bucket), uploadId);
    const exists = await stat(dir).then(
      () => true,
      () => false,
    );
    if (!exists) return noSuchUpload(ctx, uploadId);
    if (ctx.method !== 'DELETE') return next();
    await rm(dir, { recursive: true, force: true });
    ctx.status = 204;
    ctx.body = null;
  };
}

export async function startS3Server(): Promise<S3TestServer> {
  const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;
  const dir = await mkdtemp(path.join(tmpdir(), 'sluice-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir });
  server.middleware.unshift(multipartAdditions(dir));
  // Objects written whole and read whole, as S3 does (s3rver-atomic-puts.ts).
  const removeStaging = await atomicPuts(server.store);
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  // s3rver accepts any signature made with its default key pair.
  const env = {
    AWS_ENDPOINT_URL_S3: endpoint,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_REGION: 'us-east-1',
  };
  const client = s3Client({ endpoint, region: 'us-east-1', force_path_style: true });
  // Sinks opened in this process find the server as a child would, through the standard environment (the clients
  // read credentials lazily, at their first request); stop() restores it.
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  return {
    endpoint,
    client,
    env,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async keys(bucket, prefix = '') {
      const store = new S3Store(client, { bucket, prefix: '' }, 'test');
      return (await store.list(prefix)).sort();
    },
    async get(bucket, key) {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await r.Body!.transformToByteArray());
    },
    async uploads(bucket) {
      return (await readdir(uploadsDir(dir, bucket)).catch(() => [] as string[])).sort();
    },
    async stop() {
      client.destroy();
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      await server.close();
      await rm(dir, { recursive: true, force: true });
      await removeStaging();
    },
  };
}
