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
 * is deleted, and incomplete multipart uploads under the prefix are aborted.
 *
 * The Parquet sink's staging files (committed units waiting for a full-size file) are local files in a work
 * directory; on S3 they are also uploaded to `<prefix>.sluice-staged/` before the manifest records them, downloaded
 * again by a later run that needs them, and deleted once published.
 *
 * The manifest is written with last-writer-wins semantics: only one run writes a prefix at a time (the engine's
 * run lock, which is local for S3: see the README), and S3-compatible stores differ on conditional writes.
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
import { parseS3Url, s3Client, S3Store, type S3Options } from './s3.js';

export const S3_TMP = '.sluice-tmp/';
export const S3_STAGED = '.sluice-staged/';
export const S3_GENERATIONS = '.sluice-generations/';
export const S3_POINTER = '_sluice_current.json';
const NEXT = `${S3_GENERATIONS}NEXT`;

/** A commit's temp objects, uploaded and listed in its marker. */
export interface RemoteCommit {
  marker?: string;
  moves: { from: string; to: string }[];
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
    private readonly generation?: { name: string; live: string | undefined },
  ) {}

  static async open(opts: {
    url: string;
    s3?: S3Options;
    mode: 'append' | 'replace';
    fresh: boolean;
    label: string;
    log: Logger;
  }): Promise<S3Output> {
    const store = new S3Store(s3Client(opts.s3), parseS3Url(opts.url), opts.label);
    if (opts.mode === 'append') return new S3Output(store, '', opts.label, opts.log);
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
    return new S3Output(store, `${S3_GENERATIONS}${next}/`, opts.label, opts.log, { name: next, live });
  }

  url(rel = ''): string {
    return this.store.url(`${this.dataPrefix}${rel}`);
  }

  async readManifest(pipeline: string, format: Manifest['format']): Promise<Manifest> {
    const text = await this.store.getText(`${this.dataPrefix}${MANIFEST_NAME}`);
    if (text === undefined) return emptyManifest(pipeline, format);
    return parseManifest(text, this.url(MANIFEST_NAME), this.url(), format);
  }

  /** The commit point: one PutObject, so readers get the old or the new manifest (see the header on writers). */
  async writeManifest(m: Manifest): Promise<void> {
    await this.store.putText(`${this.dataPrefix}${MANIFEST_NAME}`, manifestText(m));
  }

  /** Step 1: uploads `moves` (local file → final relative key) to temp keys and writes their marker. */
  async upload(moves: readonly { from: string; to: string }[], staged: readonly { file: string; rel: string }[]) {
    const id = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    const commit: RemoteCommit = { moves: [] };
    for (const s of staged) await this.store.uploadFile(s.file, `${this.dataPrefix}${s.rel}`);
    for (const [i, m] of moves.entries()) {
      const tmp = `${this.dataPrefix}${S3_TMP}${id}/${i}.tmp`;
      await this.store.uploadFile(m.from, tmp);
      commit.moves.push({ from: tmp, to: `${this.dataPrefix}${m.to}` });
    }
    if (commit.moves.length > 0) {
      commit.marker = `${this.dataPrefix}${S3_TMP}${id}.pending`;
      await this.store.putText(commit.marker, JSON.stringify({ moves: commit.moves }));
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
    if (commit.marker) await this.store.delete([commit.marker]);
  }

  /**
   * Crash leftovers: commits the manifest records are completed; other temp objects, staging objects no unit
   * refers to and incomplete multipart uploads are removed. The staged files the manifest refers to are downloaded
   * into `stagedDir` when they are not there. Returns the files moved into place.
   */
  async settle(m: Manifest, stagedDir: string): Promise<string[]> {
    const referenced = new Set([...referencedFiles(m)].map((f) => `${this.dataPrefix}${f}`));
    const tmp = await this.store.list(`${this.dataPrefix}${S3_TMP}`);
    const present = new Set(tmp);
    const moved: string[] = [];
    for (const marker of tmp.filter((k) => k.endsWith('.pending'))) {
      let moves: RemoteCommit['moves'] = [];
      try {
        moves = (JSON.parse((await this.store.getText(marker)) ?? '{}') as Partial<RemoteCommit>).moves ?? [];
      } catch {
        // A marker is one PutObject: never torn; unreadable means not ours.
      }
      if (moves.length === 0 || !moves.every((mv) => referenced.has(mv.to))) continue;
      await this.complete({ moves, marker }, present);
      moved.push(...moves.filter((mv) => present.has(mv.from)).map((mv) => mv.to));
    }
    const left = (await this.store.list(`${this.dataPrefix}${S3_TMP}`)).filter((k) => present.has(k));
    await this.store.delete(left);

    const stagedRefs = new Set(
      Object.values(m.units).flatMap((u) => (u.staged ? [`${this.dataPrefix}${u.staged.file}`] : [])),
    );
    const stagedObjects = await this.store.list(`${this.dataPrefix}${S3_STAGED}`);
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

    const aborted = await this.store.abortUploads('');
    if (left.length + orphans.length > 0 || (aborted ?? 0) > 0)
      this.log.warn(
        `${this.label}: removed ${left.length + orphans.length} temp object(s) and ${aborted ?? 0} incomplete upload(s) left by a crash under ${this.url()}`,
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
