/**
 * Where an S3 output is: the sink's `s3` options, the `s3://bucket/prefix/` URL, and the local places that stand
 * in for what S3 lacks (a work directory for temp and staging files, the run lock). Credentials are never logged.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { SluiceError } from '../../core/errors.js';
import { secretOption } from '../../core/secret-option.js';
import { PRIVATE_DIR, privateWorkRoot } from '../../core/private-files.js';
import { shardTag, type ShardRef } from './manifest.js';

export const s3Option = z
  .object({
    endpoint: secretOption(
      z
        .string()
        .url()
        .describe(
          'Endpoint of an S3-compatible store (MinIO, R2, …). Default: `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, else AWS.',
        ),
      'connection',
    ).optional(),
    region: z.string().min(1).optional().describe('Region. Default: `AWS_REGION` or the profile, else `us-east-1`.'),
    force_path_style: z
      .boolean()
      .optional()
      .describe(
        'Address buckets as `<endpoint>/<bucket>` (most S3-compatible stores). Default: true with a custom endpoint.',
      ),
  })
  .strict()
  .optional()
  .describe(
    'For `path: s3://…` only: where the store is. Credentials come from the standard AWS environment or profile.',
  );

export type S3Options = z.infer<typeof s3Option>;

export interface S3Location {
  bucket: string;
  /** Key prefix of the output, without a leading `/`, ending in `/` (empty for a whole bucket). */
  prefix: string;
}

export function isS3Url(p: string): boolean {
  return /^s3:\/\//i.test(p);
}

export function parseS3Url(url: string): S3Location {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(url);
  const bucket = m?.[1];
  if (!m || !bucket)
    throw new SluiceError(`"${url}" is not an S3 URL`, { hint: 'write `path: s3://<bucket>/<prefix>/`' });
  const rest = m[2]!.replace(/^\/+/, '');
  return { bucket, prefix: rest === '' || rest.endsWith('/') ? rest : `${rest}/` };
}

/**
 * A local directory for an S3 output's temp and staging files, of this process and shard only (two writers of one
 * prefix must not delete each other's temp files), inside this user's private working directory
 * (core/private-files.ts: never a shared, predictable path another user could create first); directories of
 * processes that are gone are removed.
 */
export async function s3WorkDir(url: string, pipelineName: string, shard?: ShardRef): Promise<string> {
  const h = createHash('sha256')
    .update(`${url}\0${pipelineName}${shard ? `\0${shardTag(shard)}` : ''}`)
    .digest('hex')
    .slice(0, 16);
  const root = path.join(privateWorkRoot(), 's3');
  await mkdir(root, { recursive: true, mode: PRIVATE_DIR });
  for (const name of await readdir(root)) {
    const pid = name.startsWith(`${h}-`) ? Number(name.slice(h.length + 1)) : NaN;
    if (Number.isInteger(pid) && pid !== process.pid && !alive(pid))
      await rm(path.join(root, name), { recursive: true, force: true });
  }
  return path.join(root, `${h}-${process.pid}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The run lock of an S3 output: a local file in this user's private working directory, so it keeps apart this
 * user's runs on this machine (see docs/guides/s3.md: S3 has no lock that is safe on every S3-compatible
 * store), and no other user can plant one.
 */
export function s3LockPath(url: string, shard?: ShardRef): string {
  const { bucket, prefix } = parseS3Url(url);
  const h = createHash('sha256').update(`${bucket}/${prefix}`).digest('hex').slice(0, 16);
  // Shards of one output never touch each other's state (output-dir.ts): each takes a lock of its own.
  return path.join(privateWorkRoot(), 'locks', `${h}${shard ? `.${shardTag(shard)}` : ''}.lock`);
}
