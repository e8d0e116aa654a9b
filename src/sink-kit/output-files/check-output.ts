/**
 * What `sluice finalize` checks before `_sluice_shards.json` names the shards' manifests for readers: every shard's
 * manifest, and every commit marker left in the shards' temp areas and the unsharded one, read through the output's
 * store, each name in them resolved inside the output (inside-output.ts). A file that fails is refused, naming it,
 * and no record is written. Only reads: finalize takes no output's lock, so it settles nothing (a run, `compact` or
 * `sluice state` of the pipeline does, under the locks).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from './fs-durable.js';
import { LocalStore } from './local-store.js';
import { manifestName, referencedFiles, type Manifest, type ShardRef } from './manifest.js';
import { isS3Url, parseS3Url, s3Client, S3Store, type S3Options } from './s3.js';
import { S3OutputStore } from './s3-output.js';
import type { OutputStore } from './store.js';

export interface CheckedOutput {
  /** The output's absolute path, or its `s3://` URL. */
  root: string;
  s3?: S3Options | undefined;
  format: Manifest['format'];
}

/** Throws for the first file of `shards` (and of the unsharded writer's temp area) that names a path outside. */
export async function checkShardFiles(o: CheckedOutput, shards: readonly ShardRef[]): Promise<void> {
  const store = await storeOf(o);
  if (!store) return;
  await store(undefined).markers();
  for (const shard of shards) {
    const s = store(shard);
    const m = await s.readManifest('', o.format);
    const staged = Object.values(m.units).flatMap((u) => (u.staged ? [u.staged.file] : []));
    const file = isS3Url(o.root) ? `${s.location}${manifestName(shard)}` : path.join(o.root, manifestName(shard));
    await s.check([...referencedFiles(m), ...staged], { file, entry: 'a file it lists' });
    await s.markers();
  }
}

/** How to open the output's store per shard, or undefined when a local output is not there (nothing to check). */
async function storeOf(o: CheckedOutput): Promise<((shard: ShardRef | undefined) => OutputStore) | undefined> {
  if (isS3Url(o.root)) {
    const objects = new S3Store(s3Client(o.s3), parseS3Url(o.root), `${o.format} sink`);
    return (shard) => new S3OutputStore(objects, '', shard);
  }
  try {
    if (!(await stat(o.root)).isDirectory()) return undefined;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  return (shard) => new LocalStore(o.root, shard ? { shard } : {});
}
