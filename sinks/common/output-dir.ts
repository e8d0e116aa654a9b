/**
 * The output directory of a file sink (JSONL, Parquet) and its commit protocol.
 *
 * A unit's data is written to a temp file under `<dir>/.sluice-tmp/` (never named like a data file), synced, and
 * then committed:
 *   1. a marker `<name>.pending` listing the final paths is written and synced,
 *   2. the temp files are renamed into place (each rename is atomic: readers never see a partial file),
 *   3. the manifest, listing unit id → files and records, is replaced atomically (temp + rename): the commit point,
 *   4. the marker is removed.
 * On open, a marker whose files the manifest does not list means a crash between 2 and 3: those files are deleted
 * (the unit was not committed and will be written again), and everything else under `.sluice-tmp/` is removed.
 *
 * `replace` writes a new generation directory beside the output (`.<name>.sluice-generations/<gen>`), and `path`
 * becomes a symlink to it, swapped atomically in `finish()`: readers see the old generation or the complete new
 * one. A resumed run continues the generation recorded in `NEXT`.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../src/core/errors.js';
import { failpoint } from '../../src/core/failpoints.js';
import type { Logger } from '../../src/core/types.js';
import { ensureWritableDir, fsyncDir, fsyncFile, isErrno, writeFileAtomic } from './fs-durable.js';
import { readManifest, referencedFiles, writeManifest, type Manifest } from './manifest.js';
import { Mutex } from './mutex.js';

export const TMP_DIR = '.sluice-tmp';
export const STAGED_DIR = '.sluice-staged';
const MARKER_EXT = '.pending';

export interface OutputDirOptions {
  /** Absolute output path from the config. */
  root: string;
  mode: 'append' | 'replace';
  /** Start a new `replace` generation instead of continuing an unfinished one. */
  fresh: boolean;
  pipeline: string;
  format: Manifest['format'];
  /** For messages: `jsonl sink`. */
  label: string;
  log: Logger;
  hooks?: FileSinkHooks;
}

/** Test seams of the file sinks. */
export interface FileSinkHooks {
  /** Runs after a commit's files were renamed into place and before the manifest records them. */
  beforeManifest?: () => void | Promise<void>;
}

/** A temp file to move into the output directory, at `to` (relative, `/`-separated). */
export interface Move {
  from: string;
  to: string;
}

export class OutputDir {
  private readonly mutex = new Mutex();

  private constructor(
    private readonly opts: OutputDirOptions,
    /** Where data files, the manifest and the temp directories live (the new generation for `replace`). */
    readonly dataDir: string,
    public manifest: Manifest,
    private readonly generation?: Generation,
  ) {}

  get tmpDir(): string {
    return path.join(this.dataDir, TMP_DIR);
  }

  get stagedDir(): string {
    return path.join(this.dataDir, STAGED_DIR);
  }

  static async open(opts: OutputDirOptions): Promise<OutputDir> {
    let dataDir = opts.root;
    let generation: Generation | undefined;
    if (opts.mode === 'replace') {
      generation = await Generation.open(opts);
      dataDir = generation.dir;
    } else {
      await ensureWritableDir(opts.root, opts.label);
    }
    await ensureWritableDir(path.join(dataDir, TMP_DIR), opts.label);
    const manifest = await readManifest(dataDir, opts.pipeline, opts.format);
    const out = new OutputDir(opts, dataDir, manifest, generation);
    await out.removeOrphans();
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
   * Moves `moves` into place and applies `apply` to the manifest, atomically as far as the manifest goes (see the
   * protocol above). `check` runs first under the lock: returning false abandons the commit (temp files removed).
   * Returns whether the commit happened.
   */
  async commit(req: {
    moves: Move[];
    check?: (m: Manifest) => boolean;
    apply: (m: Manifest) => void;
    /** Runs under the lock after the manifest is written (e.g. deleting staged files that are now published). */
    after?: () => Promise<void>;
  }): Promise<boolean> {
    return this.mutex.run(async () => {
      if (req.check && !req.check(this.manifest)) {
        await Promise.all(req.moves.map((m) => rm(m.from, { force: true })));
        return false;
      }
      let marker: string | undefined;
      if (req.moves.length > 0) {
        await Promise.all(req.moves.map((m) => fsyncFile(m.from)));
        marker = this.tempPath('commit', MARKER_EXT.slice(1));
        await writeFile(marker, JSON.stringify({ files: req.moves.map((m) => m.to) }));
        await fsyncFile(marker);
        await fsyncDir(this.tmpDir);
        failpoint('files:before-rename');
        const dirs = new Set<string>();
        for (const m of req.moves) {
          const to = path.join(this.dataDir, m.to);
          const dir = path.dirname(to);
          if (!dirs.has(dir)) await mkdir(dir, { recursive: true });
          dirs.add(dir);
          await rename(m.from, to);
          failpoint('files:after-rename');
        }
        for (const d of dirs) await fsyncDir(d);
        await this.opts.hooks?.beforeManifest?.();
        failpoint('files:before-manifest');
      }
      const next = structuredClone(this.manifest);
      req.apply(next);
      await writeManifest(this.dataDir, this.tmpDir, next);
      this.manifest = next;
      if (marker) {
        failpoint('files:after-manifest');
        await unlink(marker);
      }
      await req.after?.();
      return true;
    });
  }

  /** Runs `fn` under the commit lock (nothing commits meanwhile). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(fn);
  }

  /** `replace`: swaps the new generation in. `append`: nothing to do. */
  async finish(): Promise<void> {
    await this.mutex.run(async () => {
      if (this.generation) await this.generation.swapIn();
    });
  }

  /** Crash leftovers: uncommitted files named by markers, every temp file, staged files no unit refers to. */
  private async removeOrphans(): Promise<void> {
    const referenced = referencedFiles(this.manifest);
    const removed: string[] = [];
    for (const name of await readdir(this.tmpDir)) {
      const p = path.join(this.tmpDir, name);
      if (name.endsWith(MARKER_EXT)) {
        let files: string[] = [];
        try {
          files = (JSON.parse(await readFile(p, 'utf8')) as { files: string[] }).files;
        } catch {
          // A marker torn by the crash was written before any rename happened: nothing of it is in place.
        }
        for (const f of files) {
          if (referenced.has(f)) continue;
          await rm(path.join(this.dataDir, f), { force: true });
          removed.push(f);
        }
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
    for (const name of stagedNames) if (!staged.has(name)) await rm(path.join(this.stagedDir, name), { force: true });
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
    const genRoot = path.join(path.dirname(root), `.${path.basename(root)}.sluice-generations`);
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
      if (name === 'NEXT' || name === next || name === live) continue;
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

async function isDir(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}
