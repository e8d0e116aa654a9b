/**
 * The output directory of a file sink (JSONL, Parquet) and its commit protocol.
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
 * one. A resumed run continues the generation recorded in `NEXT`.
 *
 * The run lock of an output (`.sluice-lock`, taken by the engine: two pipelines may write to one directory) sits in
 * the directory itself for `append`, and beside the generations for `replace` (in `.<name>.sluice-generations/`):
 * never inside a generation, which a swap replaces.
 *
 * `path: s3://bucket/prefix/` keeps the same guarantees with objects instead of renames (s3-output.ts); temp and
 * staging files are then written in a local work directory (`dataDir`) and uploaded by `commit`.
 *
 * Shards (`--shard i/n`, `shard` here) write into the same directory as one run would — the same layout, partition
 * directories included — and never touch each other's state: each has its own manifest
 * (`_sluice_manifest.shard-i-of-n.json`, manifest.ts), its own temp and staging areas (`.sluice-tmp/shard-i-of-n/`,
 * `.sluice-staged/shard-i-of-n/`), its own run lock (`.sluice-lock.shard-i-of-n`), and data file names that carry
 * the shard (`part-shard-i-of-n-…`), so the steps above hold for each shard alone while the others commit beside
 * it. An unsharded run's cleanup leaves the shards' areas alone. `replace` with shards is refused: one generation
 * swapped by each shard would publish a part of the output.
 */
import { randomBytes } from 'node:crypto';
import {
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  rmdir,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../src/core/errors.js';
import { refuseShardedReplace } from '../../src/core/sharded-replace.js';
import { failpoint } from '../../src/core/failpoints.js';
import type { Logger } from '../../src/core/types.js';
import { ensureWritableDir, fsyncDir, fsyncFile, isErrno, writeFileAtomic } from './fs-durable.js';
import {
  emptyManifest,
  manifestName,
  readManifest,
  referencedFiles,
  SHARD_ENTRY,
  shardTag,
  writeManifest,
  type Manifest,
  type ShardRef,
} from './manifest.js';
import { Mutex } from '../../src/core/concurrency.js';
import { isS3Url, s3LockPath, s3WorkDir, type S3Options } from './s3.js';
import { S3Output, type RemoteCommit } from './s3-output.js';

export const TMP_DIR = '.sluice-tmp';
export const STAGED_DIR = '.sluice-staged';
const MARKER_EXT = '.pending';
export const LOCK_FILE = '.sluice-lock';

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

function generationsRoot(root: string): string {
  return path.join(path.dirname(root), `.${path.basename(root)}.sluice-generations`);
}

export interface OutputDirOptions {
  /** Absolute output path from the config, or an `s3://bucket/prefix/` URL. */
  root: string;
  /** Where an `s3://` output's store is (endpoint, region, path style); else the standard AWS environment. */
  s3?: S3Options;
  mode: 'append' | 'replace';
  /** Start a new `replace` generation instead of continuing an unfinished one. */
  fresh: boolean;
  pipeline: string;
  format: Manifest['format'];
  /** For messages: `jsonl sink`. */
  label: string;
  log: Logger;
  hooks?: FileSinkHooks;
  /** The shard this run is (`--shard i/n`): its own manifest, temp and staging areas in the shared output. */
  shard?: ShardRef;
}

/** Test seams of the file sinks. */
export interface FileSinkHooks {
  /** Runs when a commit's temp files and marker are synced, before the manifest records them. */
  beforeManifest?: () => void | Promise<void>;
  /** Runs when the manifest records a commit, before its files are renamed into place (a crash there). */
  afterManifest?: () => void | Promise<void>;
}

/**
 * A commit the manifest records whose files are not all in place yet. Its temp files now belong to the output
 * directory (the next open, or `finish()`, moves them in): the caller must not delete them.
 */
export class CommitIncompleteError extends SluiceError {
  override readonly name = 'CommitIncompleteError';
}

/**
 * What a `.pending` marker holds: each file's temp path (absolute) and final path (relative to the data dir), and
 * the data files the commit takes out of the output (compaction: the small files its new ones replace), removed
 * once the new files are in place.
 */
interface Marker {
  moves: Move[];
  removes?: string[];
}

/** A temp file to move into the output directory, at `to` (relative, `/`-separated). */
export interface Move {
  from: string;
  to: string;
}

export class OutputDir {
  private readonly mutex = new Mutex();
  /** Set when a manifest write failed: the directory's state is known again only after the next open. */
  private unsettled: Error | undefined;

  private constructor(
    private readonly opts: OutputDirOptions,
    /** Where data files, the manifest and the temp directories live (the new generation for `replace`). */
    readonly dataDir: string,
    public manifest: Manifest,
    private readonly generation?: Generation,
    private readonly remote?: S3Output,
  ) {}

  /** Where readers find the output: the directory, or the S3 URL of the data prefix (a generation's for replace). */
  get location(): string {
    return this.remote ? this.remote.url() : this.dataDir;
  }

  /**
   * A local path of the committed data file `rel`: itself on disk; on S3 a download into the temp directory, which
   * the caller removes.
   */
  async localFile(rel: string): Promise<string> {
    if (!this.remote) return path.join(this.dataDir, rel);
    const file = this.tempPath('download');
    await this.remote.store.downloadFile(`${this.remote.dataPrefix}${rel}`, file);
    return file;
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

  /** What data file names start with after `part-`: the shard's tag, so shards' files never collide. */
  get fileTag(): string {
    return this.opts.shard ? `${shardTag(this.opts.shard)}-` : '';
  }

  private shardEntry(): string[] {
    return this.opts.shard ? [shardTag(this.opts.shard)] : [];
  }

  private get manifestName(): string {
    return manifestName(this.opts.shard);
  }

  static async open(opts: OutputDirOptions): Promise<OutputDir> {
    refuseShardedReplace(opts.label, opts.mode, opts.shard);
    if (isS3Url(opts.root)) return OutputDir.openS3(opts);
    let dataDir = opts.root;
    let generation: Generation | undefined;
    if (opts.mode === 'replace') {
      generation = await Generation.open(opts);
      dataDir = generation.dir;
    } else {
      await ensureWritableDir(opts.root, opts.label);
    }
    const tmpDir = path.join(dataDir, TMP_DIR, ...(opts.shard ? [shardTag(opts.shard)] : []));
    await ensureWritableDir(tmpDir, opts.label);
    const manifest = await readManifest(dataDir, opts.pipeline, opts.format, manifestName(opts.shard));
    const out = new OutputDir(opts, dataDir, manifest, generation);
    await out.removeOrphans();
    return out;
  }

  private static async openS3(opts: OutputDirOptions): Promise<OutputDir> {
    const remote = await S3Output.open({ url: opts.root, ...opts });
    const dataDir = await s3WorkDir(remote.url(), opts.pipeline, opts.shard);
    // Local temp files never outlive a run on S3 (a commit uploads them): whatever is there is a crash's.
    await rm(path.join(dataDir, TMP_DIR), { recursive: true, force: true });
    await ensureWritableDir(path.join(dataDir, TMP_DIR, ...(opts.shard ? [shardTag(opts.shard)] : [])), opts.label);
    const manifest = await remote.readManifest(opts.pipeline, opts.format);
    const out = new OutputDir(opts, dataDir, manifest, undefined, remote);
    await remote.settle(manifest, out.stagedDir);
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
   * above). `check` runs first under the lock: returning false abandons the commit (temp files removed). Returns
   * whether the commit happened.
   */
  async commit(req: {
    moves: Move[];
    check?: (m: Manifest) => boolean;
    apply: (m: Manifest) => void;
    /** Runs under the lock after the files are in place (e.g. deleting staged files that are now published). */
    after?: () => Promise<void>;
    /**
     * Data files (relative) the commit takes out of the output: `apply` stops referring to them, and they are
     * removed once `moves` are in place. The marker lists them, so a crash before they are all gone leaves them
     * to the next open to remove (compaction: see compact.ts).
     */
    removes?: string[];
  }): Promise<boolean> {
    if (this.remote) return this.commitS3(this.remote, req);
    return this.mutex.run(async () => {
      if (this.unsettled)
        throw new SluiceError(`${this.opts.label}: an earlier commit is unsettled: ${this.unsettled.message}`, {
          hint: 'fix the cause and run again: the next run settles it before committing anything else',
        });
      const discard = async (marker?: string): Promise<void> => {
        await Promise.all([
          ...req.moves.map((m) => rm(m.from, { recursive: true, force: true })),
          marker && rm(marker, { force: true }),
        ]);
      };
      if (req.check && !req.check(this.manifest)) {
        await discard();
        return false;
      }
      let marker: string | undefined;
      const next = structuredClone(this.manifest);
      try {
        if (req.moves.length > 0) {
          await Promise.all(req.moves.map((m) => fsyncFile(m.from)));
          marker = this.tempPath('commit', MARKER_EXT.slice(1));
          const content: Marker = { moves: req.moves, ...(req.removes?.length && { removes: req.removes }) };
          await writeFile(marker, JSON.stringify(content));
          await fsyncFile(marker);
          await fsyncDir(this.tmpDir);
          await this.opts.hooks?.beforeManifest?.();
          failpoint('files:before-manifest');
        }
        req.apply(next);
      } catch (err) {
        // Before the commit point: nothing of this commit is visible or recorded.
        await discard(marker);
        throw err;
      }
      try {
        await writeManifest(this.dataDir, this.tmpDir, next, this.manifestName);
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
          await this.opts.hooks?.afterManifest?.();
          failpoint('files:after-manifest');
          await this.moveIntoPlace(req.moves);
          await this.removeReplaced(req.removes ?? []);
          await unlink(marker);
        } catch (err) {
          // Committed, not yet visible: the marker stays, and the next open completes the commit.
          throw new CommitIncompleteError(
            `${this.opts.label}: a commit is recorded but its files are not all in place: ${(err as Error).message}`,
            {
              hint: 'fix the cause (disk space, permissions) and run again: the commit is completed when the output opens',
              cause: err,
            },
          );
        }
      }
      await req.after?.();
      return true;
    });
  }

  /** `commit` on S3 (s3-output.ts): upload, manifest, copy into place. */
  private commitS3(remote: S3Output, req: Parameters<OutputDir['commit']>[0]): Promise<boolean> {
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
      let upload: RemoteCommit;
      try {
        req.apply(next);
        // Staging files the manifest is about to refer to must be in the store before it does.
        const staged = [...stagedFiles(next)]
          .filter((f) => !stagedBefore.has(f))
          .map((rel) => ({ rel, file: path.join(this.dataDir, rel) }));
        upload = await remote.upload(req.moves, staged, req.removes ?? []);
        await this.opts.hooks?.beforeManifest?.();
        failpoint('files:before-manifest');
      } catch (err) {
        // Before the commit point: what was uploaded is temp (or unreferenced staging) and goes at the next open.
        await discard();
        throw err;
      }
      try {
        await remote.writeManifest(next);
      } catch (err) {
        this.unsettled = err as Error;
        throw new CommitIncompleteError(`${this.opts.label}: could not write the manifest: ${(err as Error).message}`, {
          hint: 'fix the cause and run again: the next run settles this commit',
          cause: err,
        });
      }
      this.manifest = next;
      try {
        await this.opts.hooks?.afterManifest?.();
        failpoint('files:after-manifest');
        await remote.complete(upload);
      } catch (err) {
        throw new CommitIncompleteError(
          `${this.opts.label}: a commit is recorded but its objects are not all in place: ${(err as Error).message}`,
          { hint: 'fix the cause and run again: the commit is completed when the output opens', cause: err },
        );
      }
      await discard();
      await req.after?.();
      const stagedNow = stagedFiles(next);
      await remote.deleteStaged([...stagedBefore].filter((f) => !stagedNow.has(f)));
      return true;
    });
  }

  private async moveIntoPlace(moves: Move[]): Promise<void> {
    const dirs = new Set<string>();
    for (const m of moves) {
      const to = path.join(this.dataDir, m.to);
      const dir = path.dirname(to);
      if (!dirs.has(dir)) await mkdir(dir, { recursive: true });
      dirs.add(dir);
      await rename(m.from, to);
      failpoint('files:after-rename');
    }
    for (const d of dirs) await fsyncDir(d);
  }

  /**
   * Removes data files a recorded commit replaced, unless the manifest still refers to them (a marker is only
   * followed once its commit is recorded, and a file named again by a later commit is not this commit's to remove).
   */
  private async removeReplaced(removes: readonly string[]): Promise<void> {
    if (removes.length === 0) return;
    const referenced = referencedFiles(this.manifest);
    const dirs = new Set<string>();
    for (const rel of removes) {
      if (referenced.has(rel)) continue;
      const file = path.join(this.dataDir, rel);
      await rm(file, { force: true });
      dirs.add(path.dirname(file));
      failpoint('compact:after-remove');
    }
    for (const d of dirs) await fsyncDir(d);
  }

  /** Bytes of each published data file the manifest names (relative path → size); files not found are left out. */
  async publishedSizes(): Promise<Map<string, number>> {
    const files = referencedFiles(this.manifest);
    const out = new Map<string, number>();
    if (this.remote) {
      const sizes = await this.remote.store.listSizes(this.remote.dataPrefix);
      for (const [key, size] of sizes) {
        const rel = key.slice(this.remote.dataPrefix.length);
        if (files.has(rel)) out.set(rel, size);
      }
      return out;
    }
    for (const rel of files) {
      try {
        out.set(rel, (await stat(path.join(this.dataDir, rel))).size);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
    return out;
  }

  /** Runs `fn` under the commit lock (nothing commits meanwhile). */
  /**
   * `sluice state drop`: this pipeline's output — the manifest first (readers and runs then see nothing committed),
   * then the files it listed, committed and staged, and the partition directories they leave empty. A crash in
   * between leaves files no manifest lists: invisible to the next run, removed by hand. Local `append` outputs only:
   * a `replace` generation or an S3 prefix is refused, with what to do instead.
   */
  async drop(): Promise<string[]> {
    if (this.remote || this.generation)
      throw new SluiceError(
        `${this.opts.label}: \`sluice state drop\` removes a local output written with \`write: append\` only`,
        {
          hint: `delete ${this.opts.root} by hand, then \`sluice state reset\` makes the next run load from the initial cursor`,
        },
      );
    return this.mutex.run(async () => {
      const files = new Set(referencedFiles(this.manifest));
      for (const u of Object.values(this.manifest.units)) if (u.staged) files.add(u.staged.file);
      await rm(path.join(this.dataDir, this.manifestName), { force: true });
      this.manifest = emptyManifest(this.opts.pipeline, this.opts.format);
      const dirs = new Set<string>();
      for (const f of files) {
        await rm(path.join(this.dataDir, f), { force: true });
        for (let d = path.posix.dirname(f); d !== '.' && d !== '/'; d = path.posix.dirname(d)) dirs.add(d);
      }
      // Deepest first; one that still holds something (another file, the user's) stays.
      for (const d of [...dirs].sort((a, b) => b.length - a.length))
        await rmdir(path.join(this.dataDir, d)).catch(() => undefined);
      return [`${files.size} file(s) in ${this.dataDir}`, `its manifest ${this.manifestName}`];
    });
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(fn);
  }

  /**
   * Completes a commit whose files could not all be moved into place earlier in the run (see `commit`); then
   * `replace` swaps the new generation in.
   */
  async finish(): Promise<void> {
    await this.mutex.run(async () => {
      if (this.remote) {
        await this.remote.settle(this.manifest, this.stagedDir);
        await this.remote.swapIn();
        return;
      }
      await this.completeRecorded();
      if (this.generation) await this.generation.swapIn();
    });
  }

  /**
   * Completes the commits the manifest records whose files are not all in place (their marker is still there):
   * moves what is left in the temp directory into place and removes the marker. Returns the files moved.
   */
  private async completeRecorded(): Promise<string[]> {
    const referenced = referencedFiles(this.manifest);
    const moved: string[] = [];
    for (const name of (await readdir(this.tmpDir)).filter((n) => n.endsWith(MARKER_EXT))) {
      const file = path.join(this.tmpDir, name);
      const marker = await readMarker(file);
      const moves = marker.moves ?? [];
      if (moves.length === 0 || !moves.every((m) => referenced.has(m.to))) continue;
      const pending: Move[] = [];
      for (const m of moves) if (await exists(m.from)) pending.push(m);
      await this.moveIntoPlace(pending);
      await this.removeReplaced(marker.removes ?? []);
      await unlink(file);
      moved.push(...pending.map((m) => m.to));
    }
    return moved;
  }

  /**
   * Crash leftovers: commits recorded in the manifest whose files were not all moved into place are completed;
   * then every temp file, and staged files no unit refers to, are removed.
   */
  private async removeOrphans(): Promise<void> {
    const completed = await this.completeRecorded();
    const referenced = referencedFiles(this.manifest);
    const removed: string[] = [];
    for (const name of await readdir(this.tmpDir)) {
      // A shard's own area: not this (unsharded) run's to clean.
      if (!this.opts.shard && SHARD_ENTRY.test(name)) continue;
      const p = path.join(this.tmpDir, name);
      // Markers of sluice before 2026-11-23 list files renamed into place before the manifest recorded them.
      if (name.endsWith(MARKER_EXT))
        for (const f of (await readMarker(p)).files ?? []) {
          if (referenced.has(f)) continue;
          await rm(path.join(this.dataDir, f), { force: true });
          removed.push(f);
        }
      await rm(p, { recursive: true, force: true });
    }
    const staged = new Set(
      Object.values(this.manifest.units).flatMap((u) => (u.staged ? [path.basename(u.staged.file)] : [])),
    );
    let stagedNames: string[] = [];
    try {
      stagedNames = await readdir(this.stagedDir);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    for (const name of stagedNames)
      if (!staged.has(name) && (this.opts.shard || !SHARD_ENTRY.test(name)))
        await rm(path.join(this.stagedDir, name), { force: true });
    if (completed.length > 0)
      this.opts.log.warn(
        `${this.opts.label}: completed a commit a crash interrupted: moved ${completed.length} committed file(s) into place`,
        { files: completed },
      );
    if (removed.length > 0)
      this.opts.log.warn(`${this.opts.label}: removed ${removed.length} uncommitted file(s) left by a crash`, {
        files: removed,
      });
  }
}

/**
 * `replace` generations: `<parent>/.<name>.sluice-generations/<gen>/`, `NEXT` naming the one being written, and
 * `<parent>/<name>` a symlink to the live one.
 */
class Generation {
  private constructor(
    private readonly root: string,
    private readonly genRoot: string,
    private readonly name: string,
  ) {}

  get dir(): string {
    return path.join(this.genRoot, this.name);
  }

  static async open(opts: OutputDirOptions): Promise<Generation> {
    const root = opts.root;
    const genRoot = generationsRoot(root);
    await ensureWritableDir(genRoot, opts.label);
    const live = await liveGeneration(root);
    const nextFile = path.join(genRoot, 'NEXT');
    let next: string | undefined;
    try {
      next = (await readFile(nextFile, 'utf8')).trim() || undefined;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    if (next !== undefined && next === live) next = undefined; // crashed after the swap, before NEXT was removed
    if (next !== undefined && (opts.fresh || !(await isDir(path.join(genRoot, next))))) {
      await rm(path.join(genRoot, next), { recursive: true, force: true });
      next = undefined;
    }
    if (next === undefined) {
      next = `gen-${new Date().toISOString().replace(/[-:.TZ]/g, '')}-${randomBytes(3).toString('hex')}`;
      await mkdir(path.join(genRoot, next));
      await writeFileAtomic(nextFile, `${next}\n`, genRoot);
    }
    // Generations that are neither live nor being written are leftovers of an interrupted swap.
    for (const name of await readdir(genRoot)) {
      if (name === 'NEXT' || name === LOCK_FILE || name === next || name === live) continue;
      await rm(path.join(genRoot, name), { recursive: true, force: true });
    }
    return new Generation(root, genRoot, next);
  }

  async swapIn(): Promise<void> {
    const parent = path.dirname(this.root);
    const previous = await liveGeneration(this.root);
    const link = path.join(this.genRoot, `.link-${randomBytes(4).toString('hex')}`);
    await symlink(path.join(path.basename(this.genRoot), this.name), link);
    failpoint('replace:before-swap');
    let st;
    try {
      st = await lstat(this.root);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    if (st && !st.isSymbolicLink()) {
      if (!st.isDirectory())
        throw new SluiceError(`${this.root} is a file, not an output directory`, {
          hint: 'move it away or point the sink somewhere else',
        });
      // A plain directory from an earlier `append` run: moved aside (and deleted below) so the symlink can take
      // its place. This one switch is not atomic; every later replace is.
      await rename(this.root, path.join(this.genRoot, `legacy-${randomBytes(3).toString('hex')}`));
    }
    await rename(link, this.root);
    await fsyncDir(parent);
    failpoint('replace:after-swap');
    await rm(path.join(this.genRoot, 'NEXT'), { force: true });
    for (const name of await readdir(this.genRoot)) {
      if (name !== this.name && (name === previous || name.startsWith('legacy-')))
        await rm(path.join(this.genRoot, name), { recursive: true, force: true });
    }
  }
}

/** The generation `root` links to, when it is a symlink into its generations directory. */
async function liveGeneration(root: string): Promise<string | undefined> {
  try {
    const target = await readlink(root);
    const genRootName = `.${path.basename(root)}.sluice-generations`;
    const parts = target.split(/[\\/]/);
    return parts.length === 2 && parts[0] === genRootName ? parts[1] : undefined;
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'EINVAL')) return undefined;
    throw err;
  }
}

/** The staging files (relative: `.sluice-staged/<name>`) the manifest's units refer to. */
function stagedFiles(m: Manifest): Set<string> {
  return new Set(Object.values(m.units).flatMap((u) => (u.staged ? [u.staged.file] : [])));
}

/** A marker's content; a marker torn by a crash was written before the commit point and holds nothing. */
async function readMarker(file: string): Promise<Partial<Marker> & { files?: string[] }> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Partial<Marker> & { files?: string[] };
  } catch {
    return {};
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return false;
    throw err;
  }
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}
