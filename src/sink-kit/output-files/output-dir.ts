/**
 * The output directory of a file sink (JSONL, Parquet) and its commit protocol, written once over a store
 * (store.ts): a local directory (local-store.ts) or an S3 prefix (s3-output.ts).
 *
 * A unit's data is written to a temp file under `<dir>/.sluice-tmp/` (never named like a data file), synced, and
 * then committed:
 *   1. a marker `<name>.pending` listing each temp file and its final path is written and synced,
 *   2. the manifest, listing unit id → files and records, is replaced atomically (temp + rename): the commit point,
 *   3. the temp files are renamed into place (each rename is atomic: readers never see a partial file),
 *   4. the marker is removed.
 * So a data file a reader can list is always committed: files appear only after the manifest records them. On
 * open, a marker whose files the manifest lists means a crash between 2 and 4: the commit is completed (rolled
 * forward) by renaming what is still in the temp directory into place. A marker whose files the manifest does not
 * list was cut off before the commit point: nothing of it is in place. Everything else under `.sluice-tmp/` is
 * removed.
 *
 * `replace` writes a new generation directory beside the output (`.<name>.sluice-generations/<gen>`), and `path`
 * becomes a symlink to it, swapped atomically in `finish()`: readers see the old generation or the complete new
 * one. A resumed run continues the generation recorded in `NEXT` (generations.ts).
 *
 * The run lock of an output (`.sluice-lock`, taken by the engine: two pipelines may write to one directory) sits in
 * the directory itself for `append`, and beside the generations for `replace` (in `.<name>.sluice-generations/`):
 * never inside a generation, which a swap replaces.
 *
 * `path: s3://bucket/prefix/` keeps the same guarantees with objects instead of renames (s3-output.ts: uploads to
 * temp keys, a server-side copy into place); temp and staging files are then written in a local work directory
 * (`dataDir`) and uploaded by `commit`, staging files before the manifest names them.
 *
 * Shards (`--shard i/n`, `shard` here) write into the same directory as one run would — the same layout, partition
 * directories included — and never touch each other's state: each has its own manifest
 * (`_sluice_manifest.shard-i-of-n.json`, manifest.ts), its own temp and staging areas (`.sluice-tmp/shard-i-of-n/`,
 * `.sluice-staged/shard-i-of-n/`), its own run lock (`.sluice-lock.shard-i-of-n`), and data file names that carry
 * the shard (`part-shard-i-of-n-…`), so the steps above hold for each shard alone while the others commit beside
 * it. An unsharded run's cleanup leaves the shards' areas alone. `replace` with shards is refused: one generation
 * swapped by each shard would publish a part of the output.
 *
 * Every name this protocol reads back from a file — a marker's moves and removals, the manifest's data and staged
 * files, a generation pointer — goes through inside-output.ts before the store acts on it: a name that would leave
 * the output (`..`, an absolute path, a link leading out) refuses the open, or the drop, naming the file.
 *
 * `sluice state drop` follows the same order: the manifest first (readers and runs then see nothing committed),
 * then the files it listed, committed and staged; for `replace`, the pointer first, then the generations
 * (generations.ts says what a reader sees).
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { refuseShardedReplace } from '../../core/sharded-replace.js';
import { atFailpoint, failpoint } from '../../core/failpoints.js';
import { Mutex } from '../../core/concurrency.js';
import { generationsRoot } from './generations.js';
import { insidePath, type NameSource } from './inside-output.js';
import { openLocalStore } from './local-store.js';
import { emptyManifest, manifestName, referencedFiles, shardTag, type Manifest, type ShardRef } from './manifest.js';
import { isS3Url, s3LockPath } from './s3.js';
import { openS3Store } from './s3-output.js';
import {
  LOCK_FILE,
  STAGED_DIR,
  TMP_DIR,
  type Generation,
  type Move,
  type OutputDirOptions,
  type OutputStore,
  type TempCleanup,
} from './store.js';

export { LOCK_FILE, STAGED_DIR, TMP_DIR };
export type { Move, OutputDirOptions } from './store.js';

/** The output's root: `path` from the config resolved against the pipeline's directory, or its `s3://` URL. */
export function outputRoot(baseDir: string, configPath: string): string {
  return isS3Url(configPath) ? configPath : path.resolve(baseDir, configPath);
}

/** Where the run lock of the output at `root` (absolute) lives, of one shard when `shard`; see the header. */
export function outputLockPath(root: string, mode: 'append' | 'replace', shard?: ShardRef): string {
  if (isS3Url(root)) return s3LockPath(root, shard);
  const name = shard ? `${LOCK_FILE}.${shardTag(shard)}` : LOCK_FILE;
  return path.join(mode === 'replace' ? generationsRoot(root) : root, name);
}

/**
 * A commit the manifest records whose files are not all in place yet. Its temp files now belong to the output
 * directory (the next open, or `finish()`, moves them in): the caller must not delete them.
 */
export class CommitIncompleteError extends SluiceError {
  override readonly name = 'CommitIncompleteError';
}

export interface CommitRequest {
  moves: Move[];
  /** Runs first under the lock: false abandons the commit (temp files removed). */
  check?: (m: Manifest) => boolean;
  apply: (m: Manifest) => void;
  /**
   * Data files (relative) the commit takes out of the output: `apply` stops referring to them, and they are
   * removed once `moves` are in place. The marker lists them, so a crash before they are all gone leaves them
   * to the next open to remove (compaction: see compact.ts).
   */
  removes?: string[];
}

export class OutputDir {
  private readonly mutex = new Mutex();
  /** Set when a manifest write failed: the directory's state is known again only after the next open. */
  private unsettled: Error | undefined;

  private constructor(
    private readonly opts: OutputDirOptions,
    private readonly store: OutputStore,
    /** Where temp and staging files are written: the data directory (the new generation's), or S3's work dir. */
    readonly dataDir: string,
    public manifest: Manifest,
    private readonly generation?: Generation,
  ) {}

  /** Staged files stay where later runs read them (a local directory), not uploaded once named (S3). */
  get isLocal(): boolean {
    return !isS3Url(this.opts.root);
  }

  /** Where readers find the output: the directory, or the S3 URL of the data prefix (a generation's for replace). */
  get location(): string {
    return this.store.location;
  }

  /** A local path of the committed data file `rel`: itself on disk; on S3 a download the caller removes. */
  localFile(rel: string): Promise<string> {
    return this.store.localCopy(rel, this.tempPath('download'));
  }

  get tmpDir(): string {
    return path.join(this.dataDir, TMP_DIR, ...this.shardEntry());
  }

  get stagedDir(): string {
    return path.join(this.dataDir, this.stagedRel);
  }

  /** The staging directory relative to the data directory, `/`-separated: how the manifest names staged files. */
  get stagedRel(): string {
    return [STAGED_DIR, ...this.shardEntry()].join('/');
  }

  /** The manifest's path or URL, for messages about the names it holds. */
  private get manifestFile(): string {
    const name = manifestName(this.opts.shard);
    return isS3Url(this.opts.root) ? `${this.location}${name}` : path.join(this.location, name);
  }

  /**
   * The local path of staged file `rel` (as the manifest names it): resolved inside the data directory before
   * anything reads or removes it (inside-output.ts), so a name or a link that leads elsewhere is refused.
   */
  stagedFile(rel: string): Promise<string> {
    return insidePath(this.dataDir, rel, { file: this.manifestFile, entry: 'a staged file' });
  }

  /** What data file names start with after `part-`: the shard's tag, so shards' files never collide. */
  get fileTag(): string {
    return this.opts.shard ? `${shardTag(this.opts.shard)}-` : '';
  }

  private shardEntry(): string[] {
    return this.opts.shard ? [shardTag(this.opts.shard)] : [];
  }

  static async open(opts: OutputDirOptions): Promise<OutputDir> {
    refuseShardedReplace(opts.label, opts.mode, opts.shard);
    const { store, dataDir, generation } = isS3Url(opts.root) ? await openS3Store(opts) : await openLocalStore(opts);
    const manifest = await store.readManifest(opts.pipeline, opts.format);
    const out = new OutputDir(opts, store, dataDir, manifest, generation);
    await out.settle();
    return out;
  }

  isCommitted(unitId: string): boolean {
    return Object.hasOwn(this.manifest.units, unitId);
  }

  committedUnits(): Set<string> {
    return new Set(Object.keys(this.manifest.units));
  }

  /** A fresh temp path under `.sluice-tmp/`; `ext` must not look like a data file (default `tmp`). */
  tempPath(stem: string, ext = 'tmp'): string {
    return path.join(this.tmpDir, `${stem}.${randomBytes(4).toString('hex')}.${ext}`);
  }

  /**
   * Applies `apply` to the manifest and moves `moves` into place, atomically as far as readers go (see the protocol
   * above); staging files the manifest stops naming are then removed. Returns whether the commit happened.
   */
  commit(req: CommitRequest): Promise<boolean> {
    return this.mutex.run(async () => {
      if (this.unsettled)
        throw new SluiceError(`${this.opts.label}: an earlier commit is unsettled: ${this.unsettled.message}`, {
          hint: 'fix the cause and run again: the next run settles it before committing anything else',
        });
      const discard = () => Promise.all(req.moves.map((m) => rm(m.from, { recursive: true, force: true })));
      if (req.check && !req.check(this.manifest)) {
        await discard();
        return false;
      }
      const next = structuredClone(this.manifest);
      const stagedBefore = stagedFiles(this.manifest);
      const id = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
      let moves: Move[] = [];
      let marker: string | undefined;
      try {
        req.apply(next);
        // Staging files the manifest is about to name must be in the store before it does.
        let put = 0;
        for (const [i, rel] of [...stagedFiles(next)].filter((f) => !stagedBefore.has(f)).entries())
          if (await this.store.putStaged(rel, path.join(this.dataDir, rel), id, i)) put++;
        const temps = await this.store.putTemps(
          req.moves.map((m) => m.from),
          id,
        );
        moves = req.moves.map((m, i) => ({ from: temps[i]!, to: m.to }));
        if (moves.length > 0)
          marker = await this.store.writeMarker(id, { moves, ...(req.removes?.length && { removes: req.removes }) });
        if (put + moves.length > 0) {
          await atFailpoint('files:before-manifest');
        }
      } catch (err) {
        // Before the commit point: nothing of this commit is visible or recorded; what the store holds of it is temp.
        await discard();
        if (marker) await this.store.abandonMarker(marker);
        throw err;
      }
      try {
        await this.store.replaceManifest(next);
      } catch (err) {
        // Whether the new manifest landed is unknown (it may have been renamed into place before a later step
        // failed): keep the temp files and the marker for the next open to settle, and take no further commits.
        this.unsettled = err as Error;
        throw new CommitIncompleteError(`${this.opts.label}: could not write the manifest: ${(err as Error).message}`, {
          hint: 'fix the cause (disk space, permissions) and run again: the next run settles this commit',
          cause: err,
        });
      }
      this.manifest = next;
      if (marker) {
        try {
          await atFailpoint('files:after-manifest');
          await this.complete(marker, moves, req.removes ?? []);
        } catch (err) {
          // Committed, not yet visible: the marker stays, and the next open completes the commit.
          throw new CommitIncompleteError(
            `${this.opts.label}: a commit is recorded but its ${this.store.words.files} are not all in place: ${(err as Error).message}`,
            {
              hint: 'fix the cause (disk space, permissions) and run again: the commit is completed when the output opens',
              cause: err,
            },
          );
        }
      }
      await discard();
      const stagedNow = stagedFiles(next);
      await this.removeStaged([...stagedBefore].filter((f) => !stagedNow.has(f)));
      return true;
    });
  }

  /** Step 3 of a recorded commit: its temp files (those still `present`) into place, then what it replaced. */
  private async complete(ref: string, moves: Move[], removes: readonly string[], present?: Set<string>) {
    const pending = present ? moves.filter((m) => present.has(m.from)) : moves;
    for (const m of pending) {
      await this.store.place(m);
      failpoint('files:after-rename');
    }
    await this.store.placed(pending);
    // A replaced file the manifest names again (a later commit) is not this commit's to remove.
    const referenced = referencedFiles(this.manifest);
    const gone = removes.filter((r) => !referenced.has(r));
    for (let i = 0; i < gone.length; i += this.store.removeBatch) {
      await this.store.remove(gone.slice(i, i + this.store.removeBatch));
      failpoint('compact:after-remove');
    }
    await this.store.removeMarker(ref);
    return pending.map((m) => m.to);
  }

  /** Staging files no unit names any more: the local copies, and (S3) the stored ones. */
  private async removeStaged(rels: string[]): Promise<void> {
    if (rels.length === 0) return;
    const files = await Promise.all(rels.map((rel) => this.stagedFile(rel)));
    await Promise.all(files.map((f) => rm(f, { force: true })));
    await this.store.removeStaged(rels);
  }

  /** Bytes of each published data file the manifest names (relative path → size); files not found are left out. */
  publishedSizes(): Promise<Map<string, number>> {
    return this.store.sizes(referencedFiles(this.manifest));
  }

  /**
   * `sluice state drop`: this pipeline's output — the manifest first (readers and runs then see nothing committed),
   * then the files it listed, committed and staged, and the partition directories they leave empty. A crash in
   * between leaves files no manifest lists: invisible to the next run, removed by hand. A `replace` output: its
   * pointer first, then its generations (generations.ts).
   */
  drop(): Promise<string[]> {
    return this.mutex.run(async () => {
      const dropped = emptyManifest(this.opts.pipeline, this.opts.format);
      if (this.generation) {
        const removed = await this.generation.drop();
        this.manifest = dropped;
        return removed;
      }
      const files = [...referencedFiles(this.manifest)];
      const staged = [...stagedFiles(this.manifest)];
      // Every name resolved inside the output before the manifest goes: one that is not refuses the whole drop.
      const src: NameSource = { file: this.manifestFile, entry: 'a file it lists' };
      await this.store.check([...files, ...staged], src);
      await Promise.all(staged.map((rel) => this.stagedFile(rel)));
      await this.store.removeManifest();
      this.manifest = dropped;
      for (let i = 0; i < files.length; i += this.store.removeBatch)
        await this.store.remove(files.slice(i, i + this.store.removeBatch));
      await this.removeStaged(staged);
      await this.store.pruneEmpty([...files, ...staged]);
      return [
        `${files.length + staged.length} ${this.store.words.files.slice(0, -1)}(s) in ${this.store.location}`,
        `its manifest ${manifestName(this.opts.shard)}`,
      ];
    });
  }

  /** Runs `fn` under the commit lock (nothing commits meanwhile). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(fn);
  }

  /**
   * Completes a commit whose files could not all be moved into place earlier in the run (see `commit`), clears
   * what is left in the temp area; then `replace` swaps the new generation in. After a manifest write that failed,
   * whether its commit landed is unknown: its temp files stay for the next open, which reads the manifest again.
   */
  async finish(): Promise<void> {
    await this.mutex.run(async () => {
      await this.settle(!this.unsettled);
      await this.generation?.swapIn();
    });
  }

  /**
   * Crash leftovers: commits recorded in the manifest whose files were not all moved into place are completed (the
   * marker's files all named by the manifest: a crash between 2 and 4); then every other temp file, staged files no
   * unit refers to and incomplete uploads are removed.
   */
  private async settle(clear = true): Promise<void> {
    const referenced = referencedFiles(this.manifest);
    const completed: string[] = [];
    for (const { ref, marker } of await this.store.markers()) {
      const moves = marker.moves ?? [];
      if (moves.length === 0 || !moves.every((m) => referenced.has(m.to))) continue;
      const present = await this.store.presentTemp(moves.map((m) => m.from));
      completed.push(...(await this.complete(ref, moves, marker.removes ?? [], present)));
    }
    const cleared = clear ? await this.store.clearTemp(referencedFiles(this.manifest)) : NOTHING_CLEARED;
    const orphans = clear ? await this.store.settleStaged(stagedFiles(this.manifest), this.stagedDir) : 0;
    const { label, log } = this.opts;
    const { moved } = this.store.words;
    const files = `${this.store.words.files.slice(0, -1)}(s)`;
    if (completed.length > 0)
      log.warn(
        `${label}: completed a commit a crash interrupted: ${moved} ${completed.length} committed ${files} into place`,
        { files: completed },
      );
    if (cleared.uncommitted.length > 0)
      log.warn(`${label}: removed ${cleared.uncommitted.length} uncommitted ${files} left by a crash`, {
        files: cleared.uncommitted,
      });
    if (cleared.temp + orphans + cleared.aborted > 0)
      log.warn(
        `${label}: removed ${cleared.temp + orphans} temp ${files} and ${cleared.aborted} incomplete upload(s) left by a crash under ${this.location}`,
      );
  }
}

const NOTHING_CLEARED: TempCleanup = { uncommitted: [], temp: 0, aborted: 0 };

/** The staging files (relative: `.sluice-staged/<name>`) the manifest's units refer to. */
function stagedFiles(m: Manifest): Set<string> {
  return new Set(Object.values(m.units).flatMap((u) => (u.staged ? [u.staged.file] : [])));
}
