/**
 * The commit protocol's store (store.ts) as an S3 prefix (`path: s3://bucket/prefix/`). Objects cannot be renamed,
 * so the protocol of output-dir.ts runs as:
 *   1. each of a commit's files is uploaded to a temp key `<prefix>.sluice-tmp/<commit>/<n>.tmp` (never named like
 *      a data file), and a marker `<prefix>.sluice-tmp/<commit>.pending` lists temp key → final key,
 *   2. the manifest object `<prefix>_sluice_manifest.json` is written (one PutObject: readers see the old or the new
 *      one): the commit point,
 *   3. each temp object is copied (CopyObject, server side: the object appears whole or not at all) to its final
 *      key, and the temp objects and the marker are deleted.
 * So an object a listing reader finds at a data key is always committed. On open, a marker whose files the manifest
 * lists is rolled forward (step 3 again, for the temp objects still there); everything else under `.sluice-tmp/`
 * is deleted.
 *
 * Incomplete multipart uploads (a run killed inside one: invisible to listing, but stored and billed): every file
 * larger than one part is uploaded in parts, and before its first part its key and UploadId are written to a
 * journal object `<prefix>.sluice-tmp/<commit>/<n>.upload` (s3.ts `uploadFile`). The next open aborts exactly the
 * uploads the journals left under the temp prefix name — on stores that cannot list uploads too — and, as a best
 * effort where the store can list them, any other incomplete upload under its own temp and staging prefixes.
 *
 * Shards (`--shard i/n`) share the prefix and its layout (output-dir.ts): shard i's manifest is
 * `<prefix>_sluice_manifest.shard-i-of-n.json`, its temp and staging objects are under `.sluice-tmp/shard-i-of-n/`
 * and `.sluice-staged/shard-i-of-n/`, and its open cleans (and aborts uploads) under those only, so shards opening
 * while others upload never remove each other's objects. An unsharded open leaves the shards' areas alone.
 *
 * The Parquet sink's staging files (committed units waiting for a full-size file) are local files in a work
 * directory; on S3 they are also uploaded to `<prefix>.sluice-staged/` before the manifest records them, downloaded
 * again by a later run that needs them, and deleted once published.
 *
 * The manifest is written with last-writer-wins semantics: only one run writes a prefix at a time (the engine's
 * run lock, which is local for S3: see docs/guides/s3.md), and S3-compatible stores differ on conditional writes.
 *
 * `replace`: generation prefixes and the pointer object `_sluice_current.json` (generations.ts).
 */
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { ensureWritableDir } from './fs-durable.js';
import { S3Generation, s3LiveGeneration, S3_GENERATIONS } from './generations.js';
import { keyOf, keyUnder, refuse, type NameSource } from './inside-output.js';
import {
  emptyManifest,
  manifestName,
  manifestText,
  parseManifest,
  SHARD_ENTRY,
  shardTag,
  type Manifest,
  type ShardRef,
} from './manifest.js';
import { parseS3Url, s3Client, s3WorkDir, S3Store } from './s3.js';
import {
  decodeMarker,
  TMP_DIR,
  type FoundMarker,
  type Marker,
  type Move,
  type OpenedStore,
  type OutputDirOptions,
  type OutputStore,
  type TempCleanup,
} from './store.js';

const S3_TMP = '.sluice-tmp/';
const S3_STAGED = '.sluice-staged/';

/**
 * An S3 output opened for a run: its prefix, or (`replace`) the new generation's; temp and staging files are
 * written in a local work directory of this process and uploaded by the commit.
 */
export async function openS3Store(opts: OutputDirOptions): Promise<OpenedStore> {
  const objects = new S3Store(s3Client(opts.s3), parseS3Url(opts.root), opts.label);
  let dataPrefix = '';
  let generation: S3Generation | undefined;
  if (opts.mode === 'replace') {
    generation = await S3Generation.open(objects, opts.fresh);
    dataPrefix = generation.prefix;
  } else {
    // An append onto a `replace` output (a dead-letter replay, operations/replay.ts) joins its live generation,
    // where readers that follow the pointer look, as a local output's link to its generation makes it do there.
    const live = await s3LiveGeneration(objects);
    if (live !== undefined) dataPrefix = `${S3_GENERATIONS}${live}/`;
  }
  const store = new S3OutputStore(objects, dataPrefix, opts.shard);
  const dataDir = await s3WorkDir(store.location, opts.pipeline, opts.shard);
  // Local temp files never outlive a run on S3 (a commit uploads them): whatever is there is a crash's.
  await rm(path.join(dataDir, TMP_DIR), { recursive: true, force: true });
  await ensureWritableDir(path.join(dataDir, TMP_DIR, ...(opts.shard ? [shardTag(opts.shard)] : [])), opts.label);
  return { store, dataDir, ...(generation && { generation }) };
}

export class S3OutputStore implements OutputStore {
  /** One DeleteObjects request. */
  readonly removeBatch = 1000;
  readonly words = { files: 'objects', moved: 'copied' };

  constructor(
    private readonly store: S3Store,
    /** Where data, manifest and temp objects go, relative to the output's prefix: '' or the new generation's. */
    private readonly dataPrefix: string,
    private readonly shard: ShardRef | undefined,
  ) {}

  get location(): string {
    return this.store.url(this.dataPrefix);
  }

  /** This writer's temp prefix (relative to the output's): a shard's own under `.sluice-tmp/`. */
  private get tmpPrefix(): string {
    return `${this.dataPrefix}${S3_TMP}${this.shard ? `${shardTag(this.shard)}/` : ''}`;
  }

  private get stagedPrefix(): string {
    return `${this.dataPrefix}${S3_STAGED}${this.shard ? `${shardTag(this.shard)}/` : ''}`;
  }

  private get manifestKey(): string {
    return `${this.dataPrefix}${manifestName(this.shard)}`;
  }

  /** Where the manifest's names come from, for messages about them. */
  private get manifestSource(): NameSource {
    return { file: this.store.url(this.manifestKey), entry: 'a data file' };
  }

  /** The one way a name in the output becomes a key (inside-output.ts); `src` says where it was read. */
  private key(rel: string, src: NameSource = this.manifestSource): string {
    return keyOf(this.dataPrefix, rel, src);
  }

  async check(rels: readonly string[], src: NameSource): Promise<void> {
    for (const rel of rels) this.key(rel, src);
  }

  /**
   * Whether `key` (under this writer's temp or staging prefix) is this writer's: an unsharded writer's prefixes
   * hold the shards' own areas, which it leaves alone.
   */
  private mine(key: string): boolean {
    if (this.shard) return true;
    const rest = key.startsWith(this.tmpPrefix)
      ? key.slice(this.tmpPrefix.length)
      : key.slice(this.stagedPrefix.length);
    return !SHARD_ENTRY.test(rest.split('/')[0]!) || !rest.includes('/');
  }

  private journal(commit: string, name: string): string {
    return `${this.tmpPrefix}${commit}/${name}.upload`;
  }

  async readManifest(pipeline: string, format: Manifest['format']): Promise<Manifest> {
    const text = await this.store.getText(this.manifestKey);
    if (text === undefined) return emptyManifest(pipeline, format);
    return parseManifest(text, this.store.url(this.manifestKey), this.location, format);
  }

  /** One PutObject (last writer wins: see the header on writers). */
  async replaceManifest(m: Manifest): Promise<void> {
    await this.store.putText(this.manifestKey, manifestText(m));
  }

  async removeManifest(): Promise<void> {
    await this.store.delete([this.manifestKey]);
  }

  async putTemps(files: readonly string[], commit: string): Promise<string[]> {
    const out: string[] = [];
    for (const [i, file] of files.entries()) {
      const tmp = `${this.tmpPrefix}${commit}/${i}.tmp`;
      await this.store.uploadFile(file, tmp, this.journal(commit, String(i)));
      out.push(tmp);
    }
    return out;
  }

  async putStaged(rel: string, file: string, commit: string, n: number): Promise<boolean> {
    await this.store.uploadFile(file, this.key(rel), this.journal(commit, `staged-${n}`));
    return true;
  }

  async removeStaged(rels: readonly string[]): Promise<void> {
    await this.store.delete(rels.map((r) => this.key(r)));
  }

  /** The marker names keys relative to the output's prefix (as markers always did), the protocol relative ones. */
  async writeMarker(commit: string, marker: Marker): Promise<string> {
    const ref = `${this.tmpPrefix}${commit}.pending`;
    const moves = marker.moves.map((m) => ({ from: m.from, to: this.key(m.to) }));
    const removes = marker.removes?.map((r) => this.key(r));
    await this.store.putText(ref, JSON.stringify({ moves, ...(removes?.length && { removes }) }));
    return ref;
  }

  async markers(): Promise<FoundMarker[]> {
    const out: FoundMarker[] = [];
    for (const ref of (await this.store.list(this.tmpPrefix)).filter((k) => this.mine(k) && k.endsWith('.pending'))) {
      let raw: unknown;
      try {
        raw = JSON.parse((await this.store.getText(ref)) ?? '{}');
      } catch {
        // A marker is one PutObject: never torn; unreadable means not ours.
        out.push({ ref, marker: {} });
        continue;
      }
      // Keys relative to the output's prefix: temp objects in this writer's temp area, data under the data prefix.
      const marker = await decodeMarker(raw, this.store.url(ref), {
        temp: (name, src) => `${this.tmpPrefix}${keyUnder(this.tmpPrefix, name, src)}`,
        data: (name, src) => keyUnder(this.dataPrefix, name, src),
      });
      out.push({ ref, marker });
    }
    return out;
  }

  /** The next open deletes it with the other temp objects (a failing store would likely refuse it now anyway). */
  async abandonMarker(): Promise<void> {}

  async removeMarker(ref: string): Promise<void> {
    await this.store.delete([ref]);
  }

  async presentTemp(refs: readonly string[]): Promise<Set<string>> {
    const listed = new Set(await this.store.list(this.tmpPrefix));
    return new Set(refs.filter((r) => listed.has(r)));
  }

  async place(m: Move): Promise<void> {
    await this.store.copy(m.from, this.key(m.to));
  }

  async placed(moves: readonly Move[]): Promise<void> {
    await this.store.delete(moves.map((m) => m.from));
  }

  async remove(rels: readonly string[]): Promise<void> {
    await this.store.delete(rels.map((r) => this.key(r)));
  }

  async pruneEmpty(): Promise<void> {}

  /** Temp objects, and the incomplete multipart uploads their journals name (and any the store lists). */
  async clearTemp(): Promise<TempCleanup> {
    const tmp = (await this.store.list(this.tmpPrefix)).filter((k) => this.mine(k));
    // Uploads a crash cut off, named by their journals, before the journals go with the other temp objects.
    let aborted = await this.store.abortJournaled(
      tmp.filter((k) => k.endsWith('.upload')),
      // A journal names an upload to this writer's temp or staging area, nothing else.
      (key, journal) => {
        const src = { file: this.store.url(journal), entry: 'key' };
        const area = [this.tmpPrefix, this.stagedPrefix].find((p) => key.startsWith(p));
        if (area === undefined) refuse(key, src, `not a key of ${this.tmpPrefix} or ${this.stagedPrefix}`);
        keyUnder(area, key, src);
      },
    );
    await this.store.delete(tmp);
    for (const prefix of [this.tmpPrefix, this.stagedPrefix])
      aborted += (await this.store.abortUploads(prefix, (k) => this.mine(k))) ?? 0;
    return { uncommitted: [], temp: tmp.length, aborted };
  }

  async settleStaged(refs: ReadonlySet<string>, stagedDir: string): Promise<number> {
    const stagedRefs = new Set([...refs].map((r) => this.key(r)));
    const stagedObjects = (await this.store.list(this.stagedPrefix)).filter((k) => this.mine(k));
    const orphans = stagedObjects.filter((k) => !stagedRefs.has(k));
    await this.store.delete(orphans);
    await mkdir(stagedDir, { recursive: true });
    const local = new Set(await readdir(stagedDir));
    for (const k of stagedObjects) {
      const name = path.posix.basename(k);
      if (stagedRefs.has(k) && !local.has(name)) await this.store.downloadFile(k, path.join(stagedDir, name));
    }
    const wanted = new Set([...stagedRefs].map((k) => path.posix.basename(k)));
    for (const name of local) if (!wanted.has(name)) await rm(path.join(stagedDir, name), { force: true });
    return orphans.length;
  }

  async sizes(rels: ReadonlySet<string>): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [key, size] of await this.store.listSizes(this.dataPrefix)) {
      const rel = key.slice(this.dataPrefix.length);
      if (rels.has(rel)) out.set(rel, size);
    }
    return out;
  }

  async localCopy(rel: string, tempFile: string): Promise<string> {
    await this.store.downloadFile(this.key(rel), tempFile);
    return tempFile;
  }
}
