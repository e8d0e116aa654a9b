/**
 * `write: replace` generations: a run writes a new generation beside the live one, and one pointer switches readers
 * from the old to the new, whole. A resumed run continues the generation `NEXT` names.
 *
 * Local: `<parent>/.<name>.sluice-generations/<gen>/`, and `<parent>/<name>` a symlink to the live one, swapped
 * atomically (a rename over it). S3: `<prefix>.sluice-generations/<gen>/` (data and manifest), `NEXT` beside them,
 * and the pointer object `<prefix>_sluice_current.json` naming the live one (one PutObject: the switch).
 *
 * `sluice state drop` of a `replace` output removes the pointer first (the symlink: one unlink; the pointer object:
 * one DeleteObject): from then on a reader that follows it finds no output at all, never a part of one. Then each
 * generation goes, its manifest before its files. A reader that resolved the pointer before the drop and lists the
 * generation meanwhile sees its files disappear one by one, as with an `append` drop. A crash in between leaves
 * generations no pointer names, which the next open removes as leftovers.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink, rename, rm, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { failpoint } from '../../core/failpoints.js';
import { ensureWritableDir, fsyncDir, isErrno, writeFileAtomic } from './fs-durable.js';
import { entryName, ownDirectory, type NameSource } from './inside-output.js';
import { MANIFEST_NAME } from './manifest.js';
import type { S3Store } from './s3.js';
import { LOCK_FILE, type Generation, type OutputDirOptions } from './store.js';

export const S3_GENERATIONS = '.sluice-generations/';
export const S3_POINTER = '_sluice_current.json';
const S3_NEXT = `${S3_GENERATIONS}NEXT`;

/** Where a local output's generations (and its run lock, for `replace`) live. */
export function generationsRoot(root: string): string {
  return path.join(path.dirname(root), `.${path.basename(root)}.sluice-generations`);
}

/** Where a generation's name was read (`NEXT`, the pointer), for the message that refuses it. */
function pointerSource(file: string, entry: string): NameSource {
  return {
    file,
    entry,
    fix: `sluice writes ${file} itself and names one of its generations there: something else changed it. Check who can write to the output, then remove it (a run starts a new generation) and run again`,
  };
}

function newGenerationName(): string {
  return `gen-${new Date().toISOString().replace(/[-:.TZ]/g, '')}-${randomBytes(3).toString('hex')}`;
}

export class LocalGeneration implements Generation {
  private constructor(
    private readonly root: string,
    private readonly genRoot: string,
    private readonly name: string,
  ) {}

  get dir(): string {
    return path.join(this.genRoot, this.name);
  }

  static async open(opts: OutputDirOptions): Promise<LocalGeneration> {
    const root = opts.root;
    const genRoot = generationsRoot(root);
    await ensureWritableDir(genRoot, opts.label);
    // Its leftovers are removed below: a link from it to elsewhere would remove that place's entries instead.
    await ownDirectory(path.dirname(root), path.basename(genRoot), {
      file: path.dirname(root),
      entry: 'the generations directory',
      fix: `sluice makes ${genRoot} itself: replace the symbolic link with the directory it links to, and run again`,
    });
    const live = await liveGeneration(root);
    const nextFile = path.join(genRoot, 'NEXT');
    let next: string | undefined;
    try {
      const text = (await readFile(nextFile, 'utf8')).trim();
      if (text) next = entryName(text, pointerSource(nextFile, 'the generation being written'));
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    if (next !== undefined && next === live) next = undefined; // crashed after the swap, before NEXT was removed
    if (next !== undefined && (opts.fresh || !(await isDir(path.join(genRoot, next))))) {
      await rm(path.join(genRoot, next), { recursive: true, force: true });
      next = undefined;
    }
    if (next === undefined) {
      next = newGenerationName();
      await mkdir(path.join(genRoot, next));
      await writeFileAtomic(nextFile, `${next}\n`, genRoot);
    }
    // Generations that are neither live nor being written are leftovers of an interrupted swap (or drop).
    for (const name of await readdir(genRoot)) {
      if (name === 'NEXT' || name === LOCK_FILE || name === next || name === live) continue;
      await rm(path.join(genRoot, name), { recursive: true, force: true });
    }
    return new LocalGeneration(root, genRoot, next);
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

  /** See the header. The run lock in the generations directory stays: it is held while this runs. */
  async drop(): Promise<string[]> {
    const live = await liveGeneration(this.root);
    if (live !== undefined) {
      await unlink(this.root);
      await fsyncDir(path.dirname(this.root));
    }
    const names = (await readdir(this.genRoot)).filter((n) => n !== LOCK_FILE && n !== 'NEXT');
    // The live one first, and in each its manifests first: a reader following one finds nothing committed.
    names.sort((a, b) => Number(b === live) - Number(a === live));
    for (const name of names) {
      const dir = path.join(this.genRoot, name);
      if (await isDir(dir))
        for (const m of (await readdir(dir)).filter((n) => n.startsWith('_sluice_manifest')))
          await rm(path.join(dir, m), { force: true });
      await rm(dir, { recursive: true, force: true });
    }
    await rm(path.join(this.genRoot, 'NEXT'), { force: true });
    return [
      live === undefined ? `no live generation of ${this.root}` : `the live generation ${live} of ${this.root}`,
      `${names.length} generation(s) under ${this.genRoot}`,
    ];
  }
}

/** The generation `root` links to, when it is a symlink into its generations directory. */
async function liveGeneration(root: string): Promise<string | undefined> {
  try {
    const target = await readlink(root);
    const genRootName = `.${path.basename(root)}.sluice-generations`;
    const parts = target.split(/[\\/]/);
    // Anything else (a link the user made, or to `..`) is not a generation of this output.
    return parts.length === 2 && parts[0] === genRootName && /^[^.]/.test(parts[1]!) ? parts[1] : undefined;
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

/** What `_sluice_current.json` holds. */
export interface GenerationPointer {
  version: 1;
  generation: string;
  /** The live generation's manifest, relative to the output's prefix. */
  manifest: string;
}

/** The generation an S3 output's pointer names, if any. */
export async function s3LiveGeneration(store: S3Store): Promise<string | undefined> {
  const text = await store.getText(S3_POINTER);
  if (text === undefined) return undefined;
  let pointer: Partial<GenerationPointer>;
  try {
    pointer = (JSON.parse(text) ?? {}) as Partial<GenerationPointer>;
  } catch {
    return undefined;
  }
  return entryName(pointer.generation, pointerSource(store.url(S3_POINTER), 'generation'));
}

export class S3Generation implements Generation {
  private constructor(
    private readonly store: S3Store,
    readonly name: string,
    private readonly live: string | undefined,
  ) {}

  /** Where the generation's data, manifest and temp objects go, relative to the output's prefix. */
  get prefix(): string {
    return `${S3_GENERATIONS}${this.name}/`;
  }

  static async open(store: S3Store, fresh: boolean): Promise<S3Generation> {
    const live = await s3LiveGeneration(store);
    const text = (await store.getText(S3_NEXT))?.trim();
    let next = text ? entryName(text, pointerSource(store.url(S3_NEXT), 'the generation being written')) : undefined;
    if (next !== undefined && next === live) next = undefined; // crashed after the swap, before NEXT was deleted
    const all = await store.list(S3_GENERATIONS);
    if (next !== undefined && fresh) next = undefined;
    if (next === undefined) {
      next = newGenerationName();
      await store.putText(S3_NEXT, `${next}\n`);
    }
    // Generations that are neither live nor being written are leftovers of an interrupted run, swap or drop.
    const stale = all.filter((k) => {
      const gen = k.slice(S3_GENERATIONS.length).split('/')[0];
      return k !== S3_NEXT && k.includes('/', S3_GENERATIONS.length) && gen !== next && gen !== live;
    });
    await store.delete(stale);
    return new S3Generation(store, next, live);
  }

  /** The pointer names the new generation (one PutObject: the switch), then the old one is deleted. */
  async swapIn(): Promise<void> {
    failpoint('replace:before-swap');
    const pointer: GenerationPointer = {
      version: 1,
      generation: this.name,
      manifest: `${this.prefix}${MANIFEST_NAME}`,
    };
    await this.store.putText(S3_POINTER, `${JSON.stringify(pointer, null, 1)}\n`);
    failpoint('replace:after-swap');
    await this.store.delete([S3_NEXT]);
    if (this.live !== undefined && this.live !== this.name)
      await this.store.delete(await this.store.list(`${S3_GENERATIONS}${this.live}/`));
  }

  /** See the header. */
  async drop(): Promise<string[]> {
    const live = await s3LiveGeneration(this.store);
    await this.store.delete([S3_POINTER]);
    const keys = await this.store.list(S3_GENERATIONS);
    const isManifest = (k: string): boolean => path.posix.basename(k).startsWith('_sluice_manifest');
    const inLive = (k: string): boolean => live !== undefined && k.startsWith(`${S3_GENERATIONS}${live}/`);
    // The live generation's manifests, then its objects, then the rest (the one being written, NEXT).
    await this.store.delete(keys.filter((k) => inLive(k) && isManifest(k)));
    await this.store.delete(keys.filter((k) => inLive(k) && !isManifest(k)));
    await this.store.delete(keys.filter((k) => !inLive(k)));
    const objects = keys.filter(inLive).length;
    return [
      live === undefined
        ? `no live generation of ${this.store.url()}`
        : `the live generation ${live} of ${this.store.url()} (${objects} object(s))`,
      `its pointer ${S3_POINTER}`,
    ];
  }
}
