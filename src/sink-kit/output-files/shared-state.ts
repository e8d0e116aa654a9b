/**
 * A small state object next to a file sink's output, for what the shards of one pipeline must agree on: the paid job
 * `sluice prepare` started. Shards on other machines (pods of an Indexed Job) share no state directory with the
 * prepare step, but they do share the output they all write to, so the record is left there.
 *
 * Local outputs keep it as a dotted file in the output directory, written atomically (readers see the old or the new
 * record); an `s3://` output as one small object beside its manifest (a PUT is atomic; last writer wins, and only
 * `sluice prepare` writes it, under the pipeline's lock).
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SharedOutput, SharedStateStore } from '../../contracts/component.js';
import { isErrno, writeFileAtomic } from './fs-durable.js';
import { insidePath } from './inside-output.js';
import { manifestName, type Manifest } from './manifest.js';
import type { S3Options } from './s3.js';

/** Named like no data file a sink writes (`*.parquet`, `*.jsonl*`), so listing readers skip it. */
export const SHARED_STATE_NAME = '.sluice-prepared.json';

/**
 * Written by `sluice finalize` once every shard of a prepared job has committed: the shards' manifests, for readers
 * that follow manifests and want to know the set is complete (src/operations/finalize.ts `writeShardsRecord`).
 */
export const SHARDS_RECORD_NAME = '_sluice_shards.json';

class LocalSharedState implements SharedStateStore {
  readonly location: string;

  constructor(
    private readonly dir: string,
    private readonly name: string,
  ) {
    this.location = path.join(dir, name);
  }

  async read(): Promise<string | undefined> {
    try {
      // A link from it to a file elsewhere is refused, not followed (inside-output.ts).
      await insidePath(this.dir, this.name, { file: this.location, entry: 'its own name' });
      return await readFile(this.location, 'utf8');
    } catch (err) {
      // ENOTDIR: the sink's path is a file (a database), which has no record beside it.
      if (isErrno(err, 'ENOENT', 'ENOTDIR')) return undefined;
      throw err;
    }
  }

  async write(text: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await writeFileAtomic(this.location, text, this.dir);
  }
}

/** `s3://bucket/prefix/`, `gs://…`: an output that is not a local path. */
export function isUrlPath(p: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(p);
}

/** An object next to an `s3://` output; the SDK is loaded only when the record is read or written. */
class S3SharedState implements SharedStateStore {
  readonly location: string;

  constructor(
    private readonly url: string,
    private readonly options: S3Options,
    private readonly name: string,
  ) {
    this.location = `${url.replace(/\/+$/, '')}/${name}`;
  }

  private async store() {
    const { S3Store, parseS3Url, s3Client } = await import('./s3.js');
    return new S3Store(s3Client(this.options), parseS3Url(this.url), 'prepared job record');
  }

  async read(): Promise<string | undefined> {
    return (await this.store()).getText(this.name);
  }

  async write(text: string): Promise<void> {
    await (await this.store()).putText(this.name, text);
  }
}

/**
 * The state object `name` (default: the prepared job's record) next to the output at `outputPath` (a sink's `path`,
 * relative to `baseDir`; `s3` its S3 options); undefined for a URL scheme without an implementation (the shards then
 * need the prepare step's state directory, `prepared.json`, on a shared volume).
 */
export function sharedStateAt(
  outputPath: string,
  baseDir: string,
  s3: S3Options = {},
  name = SHARED_STATE_NAME,
): SharedStateStore | undefined {
  if (/^s3:\/\//i.test(outputPath)) return new S3SharedState(outputPath, s3, name);
  if (isUrlPath(outputPath)) return undefined;
  return new LocalSharedState(path.resolve(baseDir, outputPath), name);
}

/**
 * A file sink's `sharedOutput` fact (contracts/component.ts): its output's state objects, manifest names, and the
 * check of the shards' files (check-output.ts, loaded when asked: it loads the S3 SDK).
 */
export function fileSharedOutput(
  outputPath: string,
  baseDir: string,
  format: Manifest['format'],
  s3: S3Options = {},
): SharedOutput | undefined {
  const prepared = sharedStateAt(outputPath, baseDir, s3);
  const shardsRecord = sharedStateAt(outputPath, baseDir, s3, SHARDS_RECORD_NAME);
  if (!prepared || !shardsRecord) return undefined;
  const root = /^s3:\/\//i.test(outputPath) ? outputPath : path.resolve(baseDir, outputPath);
  return {
    prepared,
    shardsRecord,
    manifestName,
    checkShards: async (shards) => (await import('./check-output.js')).checkShardFiles({ root, s3, format }, shards),
  };
}
