/**
 * S3-compatible object storage for the file sinks (`path: s3://bucket/prefix/`): the client and the few object
 * operations the commit protocol of output-dir.ts needs. Endpoint, region and credentials come from the
 * sink's `s3` options or the SDK's standard chain (`AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, `AWS_REGION`,
 * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE` …); credentials are never logged or put in messages.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type { CompletedPart, S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { SluiceError } from '../../core/errors.js';
import { failpoint } from '../../core/failpoints.js';
import { lazyPackage } from '../../core/lazy-package.js';
import type { S3Location, S3Options } from './s3-location.js';

// Where an output is lives in s3-location.ts; named here too, as the place the file sinks' S3 code is found.
export { isS3Url, parseS3Url, s3LockPath, s3Option, s3WorkDir } from './s3-location.js';
export type { S3Location, S3Options } from './s3-location.js';

const sdk = lazyPackage<typeof S3Sdk>('@aws-sdk/client-s3');

/** Part size of a multipart upload; a file up to this size is one PutObject. */
const PART_BYTES = 8 * 2 ** 20;
/** Parts in flight at once (each is a buffer of PART_BYTES). */
const PARTS_IN_FLIGHT = 4;

/** What an upload journal object holds: the multipart upload to abort if the run dies before completing it. */
export interface UploadJournal {
  key: string;
  upload_id: string;
}

export function s3Client(opts: S3Options = {}): S3Client {
  // This SDK warns on every run under Node 20 about its future releases; the warning says nothing about this one.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const env = process.env;
  const endpoint = opts.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const config: S3ClientConfig = {
    // Checksums on every request and response are an AWS feature many S3-compatible stores reject or lack.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    forcePathStyle: opts.force_path_style ?? endpoint !== undefined,
  };
  if (endpoint !== undefined) config.endpoint = endpoint;
  const region = opts.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  // Without a region anywhere the SDK would also look in the profile; a custom endpoint rarely cares.
  if (region !== undefined) config.region = region;
  else if (endpoint !== undefined) config.region = 'us-east-1';
  return new (sdk().S3Client)(config);
}

/** One output's objects: keys are relative to the output's prefix. */
export class S3Store {
  private readonly sdk = sdk();

  constructor(
    readonly client: S3Client,
    readonly loc: S3Location,
    private readonly label: string,
  ) {}

  url(rel = ''): string {
    return `s3://${this.loc.bucket}/${this.loc.prefix}${rel}`;
  }

  private key(rel: string): string {
    return `${this.loc.prefix}${rel}`;
  }

  private fail(what: string, rel: string, err: unknown): SluiceError {
    const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    const auth = status === 401 || status === 403 || /credential/i.test(e.message ?? '');
    return new SluiceError(
      `${this.label}: ${what} ${this.url(rel)} failed: ${e.name ?? 'error'}${status ? ` (HTTP ${status})` : ''}: ${e.message ?? String(err)}`,
      {
        hint: auth
          ? 'check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE) and that they may write to the bucket'
          : 'check the bucket exists and the endpoint (`s3.endpoint`, AWS_ENDPOINT_URL_S3) and region are right, then run again: committed units are kept',
        cause: err,
      },
    );
  }

  /** The object's text, or undefined when there is none. */
  async getText(rel: string): Promise<string | undefined> {
    try {
      const r = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.loc.bucket, Key: this.key(rel) }));
      return await r.Body!.transformToString();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw this.fail('reading', rel, err);
    }
  }

  async putText(rel: string, text: string): Promise<void> {
    try {
      await this.client.send(
        new this.sdk.PutObjectCommand({
          Bucket: this.loc.bucket,
          Key: this.key(rel),
          Body: text,
          ContentType: 'application/json',
        }),
      );
    } catch (err) {
      throw this.fail('writing', rel, err);
    }
  }

  /**
   * Uploads a local file: one PutObject up to PART_BYTES, else a multipart upload. A multipart upload cut off by a
   * crash stays in the store (invisible to listing, its parts billed) until aborted, and not every S3-compatible
   * store can list them: so its key and UploadId are first written to the object `journal` (under the output's
   * reserved temp prefix), which the next open reads to abort exactly that upload (`abortJournaled`). The journal
   * is deleted once the upload is complete.
   */
  async uploadFile(file: string, rel: string, journal: string): Promise<void> {
    const { size } = await stat(file);
    if (size <= PART_BYTES) {
      failpoint('files:mid-upload', size);
      try {
        await this.client.send(
          new this.sdk.PutObjectCommand({
            Bucket: this.loc.bucket,
            Key: this.key(rel),
            Body: createReadStream(file),
            ContentLength: size,
          }),
        );
      } catch (err) {
        throw this.fail('uploading to', rel, err);
      }
      return;
    }
    let uploadId: string | undefined;
    try {
      const created = await this.client.send(
        new this.sdk.CreateMultipartUploadCommand({ Bucket: this.loc.bucket, Key: this.key(rel) }),
      );
      uploadId = created.UploadId;
      if (!uploadId) throw new Error('the store answered without an UploadId');
      await this.putText(journal, JSON.stringify({ key: rel, upload_id: uploadId } satisfies UploadJournal));
      const parts = await this.uploadParts(file, size, rel, uploadId);
      await this.client.send(
        new this.sdk.CompleteMultipartUploadCommand({
          Bucket: this.loc.bucket,
          Key: this.key(rel),
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } catch (err) {
      // A failure this process sees: the upload is aborted now (a crash leaves it to the journal and the next open).
      if (uploadId) await this.abortUpload(rel, uploadId).catch(() => undefined);
      throw err instanceof SluiceError ? err : this.fail('uploading to', rel, err);
    }
    await this.delete([journal]);
  }

  /** The parts of `file`, PARTS_IN_FLIGHT at a time, each read into memory as the SDK needs a sized body. */
  private async uploadParts(file: string, size: number, rel: string, uploadId: string): Promise<CompletedPart[]> {
    const count = Math.ceil(size / PART_BYTES);
    const parts: CompletedPart[] = new Array<CompletedPart>(count);
    const fh = await open(file, 'r');
    let next = 0;
    let loaded = 0;
    try {
      const worker = async (): Promise<void> => {
        while (next < count) {
          const i = next++;
          const start = i * PART_BYTES;
          const buf = Buffer.allocUnsafe(Math.min(PART_BYTES, size - start));
          const { bytesRead } = await fh.read(buf, 0, buf.length, start);
          const r = await this.client.send(
            new this.sdk.UploadPartCommand({
              Bucket: this.loc.bucket,
              Key: this.key(rel),
              UploadId: uploadId,
              PartNumber: i + 1,
              Body: buf.subarray(0, bytesRead),
            }),
          );
          parts[i] = { PartNumber: i + 1, ETag: r.ETag };
          loaded += bytesRead;
          failpoint('files:mid-upload', loaded);
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARTS_IN_FLIGHT, count) }, worker));
    } finally {
      await fh.close();
    }
    return parts;
  }

  /** Aborts one multipart upload; one already completed or aborted (NoSuchUpload) is fine. */
  async abortUpload(rel: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(
        new this.sdk.AbortMultipartUploadCommand({ Bucket: this.loc.bucket, Key: this.key(rel), UploadId: uploadId }),
      );
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NoSuchUpload' || e.$metadata?.httpStatusCode === 404) return;
      throw this.fail('aborting the incomplete upload to', rel, err);
    }
  }

  /**
   * Aborts the uploads the journal objects `journals` name (see `uploadFile`); returns how many it found. A journal
   * that does not parse was cut off before its upload's first part: there is nothing of it to abort. `check` refuses
   * (throws for) a key the journal may not name, before anything is aborted.
   */
  async abortJournaled(
    journals: readonly string[],
    check: (key: string, journal: string) => void = () => undefined,
  ): Promise<number> {
    const uploads: UploadJournal[] = [];
    for (const j of journals) {
      let entry: Partial<UploadJournal> = {};
      try {
        entry = (JSON.parse((await this.getText(j)) ?? '{}') ?? {}) as Partial<UploadJournal>;
      } catch {
        continue;
      }
      if (typeof entry.key !== 'string' || typeof entry.upload_id !== 'string') continue;
      check(entry.key, j);
      uploads.push({ key: entry.key, upload_id: entry.upload_id });
    }
    for (const u of uploads) await this.abortUpload(u.key, u.upload_id);
    return uploads.length;
  }

  async downloadFile(rel: string, file: string): Promise<void> {
    try {
      const r = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.loc.bucket, Key: this.key(rel) }));
      await pipeline(r.Body as Readable, createWriteStream(file));
    } catch (err) {
      throw this.fail('downloading', rel, err);
    }
  }

  /** Server-side copy: the object appears at `to` whole, or not at all. */
  async copy(from: string, to: string): Promise<void> {
    try {
      await this.client.send(
        new this.sdk.CopyObjectCommand({
          Bucket: this.loc.bucket,
          Key: this.key(to),
          CopySource: encodeURIComponent(`${this.loc.bucket}/${this.key(from)}`).replace(/%2F/g, '/'),
        }),
      );
    } catch (err) {
      throw this.fail('copying to', to, err);
    }
  }

  async exists(rel: string): Promise<boolean> {
    return (await this.list(rel)).includes(rel);
  }

  /** Keys (relative) under `rel`. */
  async list(rel: string): Promise<string[]> {
    return [...(await this.listSizes(rel)).keys()];
  }

  /** Every key under `rel` (relative to the prefix) with its size in bytes. */
  async listSizes(rel: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    let token: string | undefined;
    try {
      do {
        const r = await this.client.send(
          new this.sdk.ListObjectsV2Command({
            Bucket: this.loc.bucket,
            Prefix: this.key(rel),
            ContinuationToken: token,
          }),
        );
        for (const o of r.Contents ?? []) if (o.Key) out.set(o.Key.slice(this.loc.prefix.length), o.Size ?? 0);
        token = r.IsTruncated ? r.NextContinuationToken : undefined;
      } while (token);
    } catch (err) {
      throw this.fail('listing', rel, err);
    }
    return out;
  }

  async delete(rels: readonly string[]): Promise<void> {
    for (let i = 0; i < rels.length; i += 1000) {
      const chunk = rels.slice(i, i + 1000);
      try {
        const r = await this.client.send(
          new this.sdk.DeleteObjectsCommand({
            Bucket: this.loc.bucket,
            Delete: { Objects: chunk.map((k) => ({ Key: this.key(k) })), Quiet: true },
          }),
        );
        const failed = r.Errors?.[0];
        if (failed)
          throw Object.assign(new Error(`${failed.Key}: ${failed.Code} ${failed.Message}`), { name: 'DeleteFailed' });
      } catch (err) {
        throw this.fail('deleting under', chunk[0]!, err);
      }
    }
  }

  /**
   * Aborts the incomplete multipart uploads under `rel` whose key (relative) `mine` accepts, as a second line
   * behind the journals (`abortJournaled`): uploads of a sluice before the journals, or a journal lost with its
   * store's listing. Returns how many, or undefined when the store cannot list them.
   */
  async abortUploads(rel: string, mine: (key: string) => boolean = () => true): Promise<number | undefined> {
    let n = 0;
    try {
      const r = await this.client.send(
        new this.sdk.ListMultipartUploadsCommand({ Bucket: this.loc.bucket, Prefix: this.key(rel) }),
      );
      for (const u of r.Uploads ?? []) {
        if (!u.Key || !u.UploadId || !mine(u.Key.slice(this.loc.prefix.length))) continue;
        await this.client.send(
          new this.sdk.AbortMultipartUploadCommand({ Bucket: this.loc.bucket, Key: u.Key, UploadId: u.UploadId }),
        );
        n++;
      }
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      // Some S3-compatible stores (s3rver) do not implement the listing; their incomplete uploads cost nothing.
      if (status === 501 || status === 405) return undefined;
      throw this.fail('aborting incomplete uploads under', rel, err);
    }
    return n;
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}
