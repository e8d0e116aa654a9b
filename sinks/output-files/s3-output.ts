/**
 * The commit protocol of output-dir.ts on S3 (`path: s3://bucket/prefix/`). Objects cannot be renamed, so:
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
 * `replace`: generation prefixes `<prefix>.sluice-generations/<gen>/` (data and manifest), `NEXT` naming the one
 * being written, and the pointer object `<prefix>_sluice_current.json` naming the live one, replaced in `finish()`:
 * readers that follow the pointer see the old generation or the complete new one.
 */
import { mkdir, readdir, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { failpoint } from '../../src/core/failpoints.js';
import type { Logger } from '../../src/core/types.js';
import {
  emptyManifest,
  manifestText,
  MANIFEST_NAME,
  parseManifest,
  referencedFiles,
  type Manifest,
} from './manifest.js';
import { manifestName, SHARD_ENTRY, shardTag, type ShardRef } from './manifest.js';
import { parseS3Url, s3Client, S3Store, type S3Options } from './s3.js';

export const S3_TMP = '.sluice-tmp/';
export const S3_STAGED = '.sluice-staged/';
export const S3_GENERATIONS = '.sluice-generations/';
export const S3_POINTER = '_sluice_current.json';
const NEXT = `${S3_GENERATIONS}NEXT`;

/** A commit's temp objects, uploaded and listed in its marker, and the data objects it takes out (compaction). */
export interface RemoteCommit {
  marker?: string;
  moves: { from: string; to: string }[];
  /** Keys (relative to the output's prefix) deleted once the moves are in place. */
  removes?: string[];
}

/** What `_sluice_current.json` holds. */
export interface GenerationPointer {
  version: 1;
  generation: string;
  /** The live generation's manifest, relative to the output's prefix. */
  manifest: string;
}

export class S3Output {
  private constructor(
    readonly store: S3Store,
    /** Where data, manifest and temp objects go, relative to the output's prefix: '' or the new generation's. */
    readonly dataPrefix: string,
    private readonly label: string,
    private readonly log: Logger,
    private readonly shard: ShardRef | undefined,
    private readonly generation?: { name: string; live: string | undefined },
  ) {}

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

  static async open(opts: {
    url: string;
    s3?: S3Options;
    mode: 'append' | 'replace';
    fresh: boolean;
    label: string;
    log: Logger;
    shard?: ShardRef;
  }): Promise<S3Output> {
    const store = new S3Store(s3Client(opts.s3), parseS3Url(opts.url), opts.label);
    if (opts.mode === 'append') {
      // An append onto a `replace` output (a dead-letter replay, engine/dead-letters.ts) joins its live generation,
      // where readers that follow the pointer look, as a local output's link to its generation makes it do there.
      const live = (await readPointer(store))?.generation;
      const dataPrefix = live === undefined ? '' : `${S3_GENERATIONS}${live}/`;
      return new S3Output(store, dataPrefix, opts.label, opts.log, opts.shard);
    }
    const live = (await readPointer(store))?.generation;
    let next = (await store.getText(NEXT))?.trim() || undefined;
    if (next !== undefined && next === live) next = undefined; // crashed after the swap, before NEXT was deleted
    const all = await store.list(S3_GENERATIONS);
    if (next !== undefined && opts.fresh) next = undefined;
    if (next === undefined) {
      next = `gen-${new Date().toISOString().replace(/[-:.TZ]/g, '')}-${randomBytes(3).toString('hex')}`;
      await store.putText(NEXT, `${next}\n`);
    }
    // Generations that are neither live nor being written are leftovers of an interrupted run or swap.
    const stale = all.filter((k) => {
      const gen = k.slice(S3_GENERATIONS.length).split('/')[0];
      return k !== NEXT && k.includes('/', S3_GENERATIONS.length) && gen !== next && gen !== live;
    });
    await store.delete(stale);
    return new S3Output(store, `${S3_GENERATIONS}${next}/`, opts.label, opts.log, opts.shard, { name: next, live });
  }

  url(rel = ''): string {
    return this.store.url(`${this.dataPrefix}${rel}`);
  }

  async readManifest(pipeline: string, format: Manifest['format']): Promise<Manifest> {
    const text = await this.store.getText(this.manifestKey);
    if (text === undefined) return emptyManifest(pipeline, format);
    return parseManifest(text, this.store.url(this.manifestKey), this.url(), format);
  }

  /** The commit point: one PutObject, so readers get the old or the new manifest (see the header on writers). */
  async writeManifest(m: Manifest): Promise<void> {
    await this.store.putText(this.manifestKey, manifestText(m));
  }

  /**
   * Step 1: uploads `moves` (local file → final relative key) to temp keys and writes their marker, which also
   * lists `removes` (data files, relative to the data prefix, that the commit takes out of the output).
   */
  async upload(
    moves: readonly { from: string; to: string }[],
    staged: readonly { file: string; rel: string }[],
    removes: readonly string[] = [],
  ) {
    const id = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    const commit: RemoteCommit = { moves: [] };
    const journal = (name: string): string => `${this.tmpPrefix}${id}/${name}.upload`;
    for (const [i, s] of staged.entries())
      await this.store.uploadFile(s.file, `${this.dataPrefix}${s.rel}`, journal(`staged-${i}`));
    for (const [i, m] of moves.entries()) {
      const tmp = `${this.tmpPrefix}${id}/${i}.tmp`;
      await this.store.uploadFile(m.from, tmp, journal(String(i)));
      commit.moves.push({ from: tmp, to: `${this.dataPrefix}${m.to}` });
    }
    if (removes.length > 0) commit.removes = removes.map((r) => `${this.dataPrefix}${r}`);
    if (commit.moves.length > 0) {
      commit.marker = `${this.tmpPrefix}${id}.pending`;
      await this.store.putText(
        commit.marker,
        JSON.stringify({ moves: commit.moves, ...(commit.removes && { removes: commit.removes }) }),
      );
    }
    return commit;
  }

  /** Step 3: the temp objects copied to their final keys, then deleted with the marker. */
  async complete(commit: RemoteCommit, present?: ReadonlySet<string>): Promise<void> {
    for (const m of commit.moves) {
      if (present && !present.has(m.from)) continue; // copied and deleted before a crash
      await this.store.copy(m.from, m.to);
      failpoint('files:after-rename');
    }
    await this.store.delete(commit.moves.map((m) => m.from));
    // The objects the commit replaced, in batches (one request each): counted by the failpoint per batch.
    const removes = commit.removes ?? [];
    for (let i = 0; i < removes.length; i += 1000) {
      await this.store.delete(removes.slice(i, i + 1000));
      failpoint('compact:after-remove');
    }
    if (commit.marker) await this.store.delete([commit.marker]);
  }

  /**
   * Crash leftovers: commits the manifest records are completed; other temp objects, staging objects no unit
   * refers to and incomplete multipart uploads are removed. The staged files the manifest refers to are downloaded
   * into `stagedDir` when they are not there. Returns the files moved into place.
   */
  async settle(m: Manifest, stagedDir: string): Promise<string[]> {
    const referenced = new Set([...referencedFiles(m)].map((f) => `${this.dataPrefix}${f}`));
    const tmp = (await this.store.list(this.tmpPrefix)).filter((k) => this.mine(k));
    const present = new Set(tmp);
    const moved: string[] = [];
    for (const marker of tmp.filter((k) => k.endsWith('.pending'))) {
      let moves: RemoteCommit['moves'] = [];
      let removes: string[] = [];
      try {
        const content = JSON.parse((await this.store.getText(marker)) ?? '{}') as Partial<RemoteCommit>;
        moves = content.moves ?? [];
        removes = content.removes ?? [];
      } catch {
        // A marker is one PutObject: never torn; unreadable means not ours.
      }
      if (moves.length === 0 || !moves.every((mv) => referenced.has(mv.to))) continue;
      // A replaced object the manifest names again is not this commit's to delete.
      await this.complete({ moves, marker, removes: removes.filter((k) => !referenced.has(k)) }, present);
      moved.push(...moves.filter((mv) => present.has(mv.from)).map((mv) => mv.to));
    }
    // Uploads a crash cut off, named by their journals, before the journals go with the other temp objects.
    const journaled = await this.store.abortJournaled(tmp.filter((k) => k.endsWith('.upload')));
    const left = (await this.store.list(this.tmpPrefix)).filter((k) => present.has(k));
    await this.store.delete(left);

    const stagedRefs = new Set(
      Object.values(m.units).flatMap((u) => (u.staged ? [`${this.dataPrefix}${u.staged.file}`] : [])),
    );
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

    let aborted = journaled;
    for (const prefix of [this.tmpPrefix, this.stagedPrefix])
      aborted += (await this.store.abortUploads(prefix, (k) => this.mine(k))) ?? 0;
    if (left.length + orphans.length > 0 || aborted > 0)
      this.log.warn(
        `${this.label}: removed ${left.length + orphans.length} temp object(s) and ${aborted} incomplete upload(s) left by a crash under ${this.url()}`,
      );
    if (moved.length > 0)
      this.log.warn(
        `${this.label}: completed a commit a crash interrupted: copied ${moved.length} committed object(s) into place`,
      );
    return moved;
  }

  /** Deletes staging objects once their units are published. */
  async deleteStaged(rels: readonly string[]): Promise<void> {
    await this.store.delete(rels.map((r) => `${this.dataPrefix}${r}`));
  }

  /** `replace`: the pointer names the new generation (one PutObject: the switch), then the old one is deleted. */
  async swapIn(): Promise<void> {
    const g = this.generation;
    if (!g) return;
    failpoint('replace:before-swap');
    const pointer: GenerationPointer = {
      version: 1,
      generation: g.name,
      manifest: `${S3_GENERATIONS}${g.name}/${MANIFEST_NAME}`,
    };
    await this.store.putText(S3_POINTER, `${JSON.stringify(pointer, null, 1)}\n`);
    failpoint('replace:after-swap');
    await this.store.delete([NEXT]);
    if (g.live !== undefined && g.live !== g.name)
      await this.store.delete(await this.store.list(`${S3_GENERATIONS}${g.live}/`));
  }
}

async function readPointer(store: S3Store): Promise<GenerationPointer | undefined> {
  const text = await store.getText(S3_POINTER);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as GenerationPointer;
  } catch {
    return undefined;
  }
}
