/**
 * The commit protocol's store (store.ts) as a local directory: temp files are synced where they are written, under
 * `<dir>/.sluice-tmp/` (same filesystem: a rename moves them into place atomically), the manifest is replaced
 * through a temp file and a rename, and every rename and removal is followed by an fsync of its directory.
 */
import { lstat, readFile, readdir, rename, rm, rmdir, stat, unlink, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { ensureWritableDir, fsyncDir, fsyncFile, isErrno } from './fs-durable.js';
import { LocalGeneration } from './generations.js';
import { manifestName, readManifest, SHARD_ENTRY, shardTag, writeManifest, type Manifest } from './manifest.js';
import {
  TMP_DIR,
  type FoundMarker,
  type Marker,
  type Move,
  type OpenedStore,
  type OutputDirOptions,
  type OutputStore,
  type TempCleanup,
} from './store.js';

const MARKER_EXT = '.pending';

/** A local output opened for a run: its directory, or (`replace`) the new generation's. */
export async function openLocalStore(opts: OutputDirOptions): Promise<OpenedStore> {
  let dataDir = opts.root;
  let generation: LocalGeneration | undefined;
  if (opts.mode === 'replace') {
    generation = await LocalGeneration.open(opts);
    dataDir = generation.dir;
  } else {
    await ensureWritableDir(opts.root, opts.label);
  }
  const store = new LocalStore(dataDir, opts);
  await ensureWritableDir(store.tmpDir, opts.label);
  return { store, dataDir, ...(generation && { generation }) };
}

export class LocalStore implements OutputStore {
  readonly removeBatch = 1;
  readonly words = { files: 'files', moved: 'moved' };
  readonly tmpDir: string;
  private readonly manifestName: string;

  constructor(
    private readonly dir: string,
    private readonly opts: Pick<OutputDirOptions, 'shard'>,
  ) {
    this.tmpDir = path.join(dir, TMP_DIR, ...(opts.shard ? [shardTag(opts.shard)] : []));
    this.manifestName = manifestName(opts.shard);
  }

  get location(): string {
    return this.dir;
  }

  readManifest(pipeline: string, format: Manifest['format']): Promise<Manifest> {
    return readManifest(this.dir, pipeline, format, this.manifestName);
  }

  replaceManifest(m: Manifest): Promise<void> {
    return writeManifest(this.dir, this.tmpDir, m, this.manifestName);
  }

  async removeManifest(): Promise<void> {
    await rm(path.join(this.dir, this.manifestName), { force: true });
    await fsyncDir(this.dir);
  }

  async putTemps(files: readonly string[]): Promise<string[]> {
    await Promise.all(files.map((f) => fsyncFile(f)));
    return [...files];
  }

  /** The staging file is already where later runs look (synced by its writer). */
  async putStaged(): Promise<boolean> {
    return false;
  }

  /** The local copy the protocol removes is the stored file. */
  async removeStaged(): Promise<void> {}

  async writeMarker(commit: string, marker: Marker): Promise<string> {
    const file = path.join(this.tmpDir, `commit.${commit}${MARKER_EXT}`);
    await writeFile(file, JSON.stringify(marker));
    await fsyncFile(file);
    await fsyncDir(this.tmpDir);
    return file;
  }

  async markers(): Promise<FoundMarker[]> {
    const out: FoundMarker[] = [];
    for (const name of (await readdir(this.tmpDir)).filter((n) => n.endsWith(MARKER_EXT))) {
      const ref = path.join(this.tmpDir, name);
      out.push({ ref, marker: await readMarker(ref) });
    }
    return out;
  }

  async abandonMarker(ref: string): Promise<void> {
    await rm(ref, { force: true });
  }

  async removeMarker(ref: string): Promise<void> {
    await unlink(ref);
  }

  async presentTemp(refs: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const r of refs) if (await exists(r)) out.add(r);
    return out;
  }

  async place(m: Move): Promise<void> {
    const to = path.join(this.dir, m.to);
    await mkdir(path.dirname(to), { recursive: true });
    await rename(m.from, to);
  }

  async placed(moves: readonly Move[]): Promise<void> {
    for (const d of new Set(moves.map((m) => path.dirname(path.join(this.dir, m.to))))) await fsyncDir(d);
  }

  async remove(rels: readonly string[]): Promise<void> {
    const dirs = new Set<string>();
    for (const rel of rels) {
      const file = path.join(this.dir, rel);
      await rm(file, { force: true });
      dirs.add(path.dirname(file));
    }
    for (const d of dirs) await fsyncDir(d);
  }

  async pruneEmpty(rels: readonly string[]): Promise<void> {
    const dirs = new Set<string>();
    for (const f of rels)
      for (let d = path.posix.dirname(f); d !== '.' && d !== '/'; d = path.posix.dirname(d)) dirs.add(d);
    // Deepest first; one that still holds something (another file, the user's) stays.
    for (const d of [...dirs].sort((a, b) => b.length - a.length))
      await rmdir(path.join(this.dir, d)).catch(() => undefined);
  }

  /** Local temp files cost nothing and go at every open: only data files an old marker left are reported. */
  async clearTemp(referenced: ReadonlySet<string>): Promise<TempCleanup> {
    const uncommitted: string[] = [];
    for (const name of await readdir(this.tmpDir)) {
      // A shard's own area: not this (unsharded) run's to clean.
      if (!this.opts.shard && SHARD_ENTRY.test(name)) continue;
      const p = path.join(this.tmpDir, name);
      // Markers of sluice before 2026-11-23 list files renamed into place before the manifest recorded them.
      if (name.endsWith(MARKER_EXT))
        for (const f of (await readMarker(p)).files ?? []) {
          if (referenced.has(f)) continue;
          await rm(path.join(this.dir, f), { force: true });
          uncommitted.push(f);
        }
      await rm(p, { recursive: true, force: true });
    }
    return { uncommitted, temp: 0, aborted: 0 };
  }

  async settleStaged(refs: ReadonlySet<string>, stagedDir: string): Promise<number> {
    const wanted = new Set([...refs].map((r) => path.posix.basename(r)));
    let names: string[] = [];
    try {
      names = await readdir(stagedDir);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    for (const name of names)
      if (!wanted.has(name) && (this.opts.shard || !SHARD_ENTRY.test(name)))
        await rm(path.join(stagedDir, name), { force: true });
    return 0;
  }

  async sizes(rels: ReadonlySet<string>): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const rel of rels) {
      try {
        out.set(rel, (await stat(path.join(this.dir, rel))).size);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
    return out;
  }

  async localCopy(rel: string): Promise<string> {
    return path.join(this.dir, rel);
  }
}

/** A marker's content; a marker torn by a crash was written before the commit point and holds nothing. */
async function readMarker(file: string): Promise<FoundMarker['marker']> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as FoundMarker['marker'];
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
