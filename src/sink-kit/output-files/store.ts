/**
 * Where a file sink's output lives, as the commit protocol of output-dir.ts sees it: a local directory
 * (local-store.ts) or an S3 prefix (s3-output.ts). The protocol is written once over these primitives; a store only
 * says how its temp files become durable, how a file is moved into place (a rename, or a server-side copy and a
 * delete), and how the manifest is replaced atomically. Paths named `rel` are relative to the data root (the output
 * directory, or a `replace` generation), `/`-separated, as the manifest names them.
 */
import type { Logger } from '../../core/types.js';
import { refuse, type NameSource } from './inside-output.js';
import type { Manifest, ShardRef } from './manifest.js';
import type { S3Options } from './s3.js';

export const TMP_DIR = '.sluice-tmp';
export const STAGED_DIR = '.sluice-staged';
export const LOCK_FILE = '.sluice-lock';

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
  /** The shard this run is (`--shard i/n`): its own manifest, temp and staging areas in the shared output. */
  shard?: ShardRef;
}

/** `write: replace`: the generation a run writes, switched in by one pointer (generations.ts). */
export interface Generation {
  /** The pointer names this generation: readers see the old one or this one, whole. */
  swapIn(): Promise<void>;
  /** `sluice state drop`: the pointer removed first, then every generation; returns what went, for the history. */
  drop(): Promise<string[]>;
}

/** A store opened for a run, with the local directory its temp and staging files are written in. */
export interface OpenedStore {
  store: OutputStore;
  dataDir: string;
  generation?: Generation;
}

/** A temp file to move into the output, at `to` (relative, `/`-separated). */
export interface Move {
  from: string;
  to: string;
}

/**
 * What a `.pending` marker holds: each file's temp name in the store and its final path, and the data files the
 * commit takes out of the output (compaction: the small files its new ones replace), removed once the new files are
 * in place.
 */
export interface Marker {
  moves: Move[];
  removes?: string[];
}

/** A marker found in the temp area; one torn or unreadable holds nothing. */
export interface FoundMarker {
  ref: string;
  marker: Partial<Marker> & {
    /** Markers of sluice before 2026-11-23 (local only): files renamed into place before the manifest named them. */
    files?: string[];
  };
}

/** How a store resolves the names a marker holds (inside-output.ts): its temp files, and names in the output. */
export interface MarkerNames {
  /** A temp file's name as the marker holds it, returned as the store's ref for it. */
  temp(name: unknown, src: NameSource): string | Promise<string>;
  /** A data file's name as the marker holds it, returned relative to the data root. */
  data(name: unknown, src: NameSource): string | Promise<string>;
}

/**
 * A marker's parsed content (`ref` names it), every name resolved by `names` before the store acts on any: one that
 * leaves the temp area or the output, or content of another shape, is refused (UnsafeNameError), naming the marker.
 */
export async function decodeMarker(raw: unknown, ref: string, names: MarkerNames): Promise<FoundMarker['marker']> {
  const fix = `sluice writes its commit markers itself and names only its temp area and its output in them: something else wrote or changed ${ref}. Check who can write to the output, then remove that marker and run again`;
  const at = (entry: string): NameSource => ({ file: ref, entry, fix });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return refuse(raw, at('its content'), 'not a marker');
  const m = raw as Record<string, unknown>;
  const list = (key: string): unknown[] => {
    const v = m[key];
    if (v === undefined) return [];
    return Array.isArray(v) ? v : refuse(v, at(key), 'not a list');
  };
  const out: FoundMarker['marker'] = { moves: [], removes: [] };
  for (const [i, move] of list('moves').entries()) {
    const mv = (typeof move === 'object' && move !== null ? move : {}) as Record<string, unknown>;
    out.moves!.push({
      from: await names.temp(mv.from, at(`moves[${i}].from`)),
      to: await names.data(mv.to, at(`moves[${i}].to`)),
    });
  }
  for (const [i, r] of list('removes').entries()) out.removes!.push(await names.data(r, at(`removes[${i}]`)));
  if (m.files !== undefined) {
    out.files = [];
    for (const [i, f] of list('files').entries()) out.files.push(await names.data(f, at(`files[${i}]`)));
  }
  return out;
}

/** What a cleanup of the temp area removed, for the warning a crash's leftovers deserve. */
export interface TempCleanup {
  /** Data files an old-style marker left in place without a commit (removed). */
  uncommitted: string[];
  /** Temp files or objects removed. */
  temp: number;
  /** Incomplete multipart uploads aborted (S3). */
  aborted: number;
}

export interface OutputStore {
  /** Where readers find the data: the directory, or the `s3://` URL of the data prefix. */
  readonly location: string;
  /** How many data files one `remove` takes at most (one request on S3); the protocol's failpoint counts calls. */
  readonly removeBatch: number;
  /** Words for messages: `files` or `objects`, `moved` or `copied`. */
  readonly words: { files: string; moved: string };

  readManifest(pipeline: string, format: Manifest['format']): Promise<Manifest>;
  /** The commit point: readers get the old manifest or the new one, whole. */
  replaceManifest(m: Manifest): Promise<void>;
  removeManifest(): Promise<void>;

  /**
   * Step 1 for the files the commit moves into place: the local temp files made durable where `place` takes them
   * from (synced in place; uploaded to temp keys); returns their names there, in order. `commit` names the commit.
   */
  putTemps(files: readonly string[], commit: string): Promise<string[]>;
  /**
   * A staging file the manifest is about to name, made durable where a later run finds it (S3: uploaded); false
   * when it already is (a local one, synced by its writer).
   */
  putStaged(rel: string, file: string, commit: string, n: number): Promise<boolean>;
  /** Staging files no unit names any more, removed from the store (the protocol removes the local copies). */
  removeStaged(rels: readonly string[]): Promise<void>;
  writeMarker(commit: string, marker: Marker): Promise<string>;
  /** The markers in this writer's temp area (not the shards' own areas of an unsharded writer). */
  markers(): Promise<FoundMarker[]>;
  /** A marker written before its commit point was not reached: gone now, or left for the next open's cleanup. */
  abandonMarker(ref: string): Promise<void>;
  removeMarker(ref: string): Promise<void>;
  /** Of the temp files `refs`, those still in the temp area (a roll-forward moved the others already). */
  presentTemp(refs: readonly string[]): Promise<Set<string>>;

  /** Step 3 for one file: the temp file appears at `move.to` whole, and is gone from the temp area. */
  place(move: Move): Promise<void>;
  /** Once `moves` are placed: what makes them durable or tidy (directory syncs; the temp objects' batch delete). */
  placed(moves: readonly Move[]): Promise<void>;
  /** Data files taken out of the output (at most `removeBatch`). */
  remove(rels: readonly string[]): Promise<void>;
  /** After a drop: directories the removed files leave empty (objects have none). */
  pruneEmpty(rels: readonly string[]): Promise<void>;

  /**
   * Every other leftover of this writer's temp area removed (a crash's: the commits the manifest records are
   * completed before), `referenced` the data files the manifest names.
   */
  clearTemp(referenced: ReadonlySet<string>): Promise<TempCleanup>;
  /**
   * Staging files: those no unit refers to removed; those `refs` names present in the local staging directory
   * `stagedDir` (S3: downloaded when missing). Returns how many orphans went.
   */
  settleStaged(refs: ReadonlySet<string>, stagedDir: string): Promise<number>;

  /**
   * Each of the data files `rels` (read at `src`) resolved inside the data root (inside-output.ts), the first that is
   * not refused: called before a batch of them is acted on, so none is touched unless all pass.
   */
  check(rels: readonly string[], src: NameSource): Promise<void>;

  /** Bytes of the data files `rels` (those found). */
  sizes(rels: ReadonlySet<string>): Promise<Map<string, number>>;
  /** A local path holding data file `rel`: itself, or a download into `tempFile`. */
  localCopy(rel: string, tempFile: string): Promise<string>;
}
