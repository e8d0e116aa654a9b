/**
 * The commit protocol's store (store.ts) as a local directory: temp files are synced where they are written, under
 * `<dir>/.sluice-tmp/` (same filesystem: a rename moves them into place atomically), the manifest is replaced
 * through a temp file and a rename, and every rename and removal is followed by an fsync of its directory.
 */
import { lstat, readFile, readdir, rename, rm, rmdir, stat, unlink, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { ensureWritableDir, fsyncDir, fsyncFile, isErrno } from './fs-durable.js';
import { LocalGeneration } from './generations.js';
import { insidePath, insidePaths, ownDirectory, refuse, type NameSource } from './inside-output.js';
import { manifestName, readManifest, SHARD_ENTRY, shardTag, writeManifest, type Manifest } from './manifest.js';
import {
  decodeMarker,
  STAGED_DIR,
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
  // The open clears the temp and staging areas: a link from either to elsewhere would clear that place instead.
  const areas = [TMP_DIR, STAGED_DIR].map((d) => [d, ...(opts.shard ? [shardTag(opts.shard)] : [])].join('/'));
  for (const area of areas)
    await ownDirectory(dataDir, area, {
      file: dataDir,
      entry: 'its temp or staging area',
      fix: `sluice makes ${area} itself: remove the symbolic link (sluice makes the directory again), and run again`,
    });
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

  /** Where the manifest's names come from, for messages about them. */
  private get manifestSource(): NameSource {
    return { file: path.join(this.dir, this.manifestName), entry: 'a data file' };
  }

  /** The one way a name in the output becomes a path (inside-output.ts); `src` says where it was read. */
  private at(rel: unknown, src: NameSource = this.manifestSource): Promise<string> {
    return insidePath(this.dir, rel, src);
  }

  async check(rels: readonly string[], src: NameSource): Promise<void> {
    await insidePaths(this.dir, rels, src);
  }

  async readManifest(pipeline: string, format: Manifest['format']): Promise<Manifest> {
    await this.at(this.manifestName, { ...this.manifestSource, entry: 'its manifest' });
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
    for (const name of (await this.tmpEntries()).filter((n) => n.endsWith(MARKER_EXT))) {
      const ref = path.join(this.tmpDir, name);
      out.push({ ref, marker: await this.readMarker(ref) });
    }
    return out;
  }

  private async tmpEntries(): Promise<string[]> {
    try {
      return await readdir(this.tmpDir);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
  }

  /**
   * A marker's content, its names resolved before anything acts on them: temp files (absolute paths) inside this
   * writer's temp area, data files inside the output. A marker torn by a crash was written before the commit point
   * and holds nothing.
   */
  private async readMarker(ref: string): Promise<FoundMarker['marker']> {
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(ref, 'utf8'));
    } catch {
      return {};
    }
    const tmp = `${this.tmpDir}${path.sep}`;
    return decodeMarker(raw, ref, {
      temp: async (name, src) => {
        if (typeof name !== 'string' || !name.startsWith(tmp)) return refuse(name, src, `not a file under ${tmp}`);
        await insidePath(this.tmpDir, name.slice(tmp.length), src);
        return name;
      },
      data: async (name, src) => (await this.at(name, src), name as string),
    });
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
    const to = await this.at(m.to);
    await mkdir(path.dirname(to), { recursive: true });
    await rename(m.from, to);
  }

  async placed(moves: readonly Move[]): Promise<void> {
    for (const d of new Set(moves.map((m) => path.posix.dirname(m.to))))
      await fsyncDir(d === '.' ? this.dir : await this.at(d));
  }

  async remove(rels: readonly string[]): Promise<void> {
    const files = await insidePaths(this.dir, rels, this.manifestSource);
    for (const file of files) await rm(file, { force: true });
    for (const d of new Set(files.map((f) => path.dirname(f)))) await fsyncDir(d);
  }

  async pruneEmpty(rels: readonly string[]): Promise<void> {
    const dirs = new Set<string>();
    for (const f of rels)
      for (let d = path.posix.dirname(f); d !== '.' && d !== '/'; d = path.posix.dirname(d)) dirs.add(d);
    // Deepest first; one that still holds something (another file, the user's) stays.
    for (const d of [...dirs].sort((a, b) => b.length - a.length)) await rmdir(await this.at(d)).catch(() => undefined);
  }

  /** Local temp files cost nothing and go at every open: only data files an old marker left are reported. */
  async clearTemp(referenced: ReadonlySet<string>): Promise<TempCleanup> {
    const uncommitted: string[] = [];
    // A shard's own area: not this (unsharded) run's to clean.
    const names = (await this.tmpEntries()).filter((n) => this.opts.shard || !SHARD_ENTRY.test(n));
    // Markers of sluice before 2026-11-23 list files renamed into place before the manifest recorded them: every
    // marker read (and its names resolved) before anything goes.
    const old = new Map<string, string[]>();
    for (const name of names.filter((n) => n.endsWith(MARKER_EXT))) {
      const p = path.join(this.tmpDir, name);
      old.set(
        p,
        ((await this.readMarker(p)).files ?? []).filter((f) => !referenced.has(f)),
      );
    }
    for (const name of names) {
      const p = path.join(this.tmpDir, name);
      for (const f of old.get(p) ?? []) {
        await rm(await this.at(f, { file: p, entry: 'files' }), { force: true });
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
        out.set(rel, (await stat(await this.at(rel))).size);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
    return out;
  }

  localCopy(rel: string): Promise<string> {
    return this.at(rel);
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
