/**
 * `_sluice_manifest.json`: the commit record of a file sink's output directory. A unit is committed when the
 * manifest lists it, and its data files appear in the directory only after that (see output-dir.ts), so a reader
 * may list the directory or read the files listed here.
 *
 * The shards of a sharded run (`--shard i/n`) write their files into the same directory, each recording its own
 * units in its own manifest, `_sluice_manifest.shard-<i>-of-<n>.json`: a reader following manifests reads every
 * `_sluice_manifest*.json` of the directory (their units are disjoint) and takes the union of their files.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../core/errors.js';
import type { SerializedType } from '../../core/logical-type.js';
import { isErrno, writeFileAtomic } from './fs-durable.js';
import { refuse, relativeName, type NameSource } from './inside-output.js';

export const MANIFEST_NAME = '_sluice_manifest.json';

/** Which shard of how many (`--shard i/n`). */
export interface ShardRef {
  index: number;
  count: number;
}

/** `shard-1-of-4`: names a shard's manifest, its temp and staging areas and its data files. */
export function shardTag(shard: ShardRef): string {
  return `shard-${shard.index}-of-${shard.count}`;
}

/** A shard tag as a directory entry (`shard-1-of-4`): a shard's own area, which other writers leave alone. */
export const SHARD_ENTRY = /^shard-\d+-of-\d+$/;

/** The manifest of an unsharded run, or of one shard: `_sluice_manifest.shard-1-of-4.json`. */
export function manifestName(shard?: ShardRef): string {
  return shard ? `_sluice_manifest.${shardTag(shard)}.json` : MANIFEST_NAME;
}

export interface ManifestUnit {
  records: number;
  /** Data files holding the unit's rows, relative to the output directory, `/`-separated. */
  files: string[];
  committed_at: string;
  /**
   * Parquet only: the unit is committed but its rows still wait in a staging file (not visible to readers) until
   * enough have gathered for a full-size Parquet file, or the run finishes.
   */
  staged?: {
    file: string;
    bytes: number;
    /**
     * Where the unit's bytes start in `file` (`bytes` of them): a JSONL output's units share their staging file, the
     * file they are published as (sinks/jsonl/spools.ts). Absent: the file holds this unit alone, from its start.
     */
    offset?: number;
    schema: [string, SerializedType][];
    /**
     * Bytes of the file's longest line (Parquet: DuckDB's reader is sized to it). Absent: staged by a sluice before
     * 2026-11-26, whose records were not judged before staging: the sink judges them when it opens.
     */
    longest?: number;
    /**
     * The unit's raw JSONL lines as they came (the Parquet sink's native path), not rows sluice wrote: a publish
     * that DuckDB's reader refuses over such a file's text (a key twice in an object) writes it again from its rows.
     */
    raw?: true;
  };
  /** The unit's `checkpoint` (incremental loads), recorded by the same manifest swap as its rows. */
  checkpoint?: unknown;
}

export interface Manifest {
  version: 1;
  pipeline: string;
  format: 'jsonl' | 'parquet';
  updated_at: string;
  units: Record<string, ManifestUnit>;
  /**
   * The dataset's columns (dataset-schema.ts: declared ones first, then in the order they first appeared). JSONL:
   * of every committed unit, updated by each unit's commit. Parquet: of the published files; each publish starts
   * from it, so every file of the directory lists columns and struct fields in one order, with the dataset's
   * widened types.
   */
  schema?: [string, SerializedType][];
}

export function emptyManifest(pipeline: string, format: Manifest['format']): Manifest {
  return { version: 1, pipeline, format, updated_at: new Date().toISOString(), units: {} };
}

export async function readManifest(
  dir: string,
  pipeline: string,
  format: Manifest['format'],
  name = MANIFEST_NAME,
): Promise<Manifest> {
  const file = path.join(dir, name);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return emptyManifest(pipeline, format);
    throw err;
  }
  return parseManifest(text, file, dir, format);
}

/** A manifest's text, checked; `file` and `dir` name it in messages (a path, or an `s3://` URL). */
export function parseManifest(text: string, file: string, dir: string, format: Manifest['format']): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(text) as Manifest;
  } catch (err) {
    throw new SluiceError(`${file} is not valid JSON`, {
      hint: 'it is written atomically by sluice, so something else changed it: restore it, or delete it together with the data files of that directory',
      cause: err,
    });
  }
  if (typeof m !== 'object' || m === null || m.version !== 1 || typeof m.units !== 'object' || m.units === null)
    throw new SluiceError(`${file} is not a sluice manifest (version 1)`, {
      hint: 'point the sink at a directory of its own',
    });
  if (m.format !== format)
    throw new SluiceError(`${dir} holds ${m.format} output, not ${format}`, {
      hint: 'point the sink at a directory of its own',
    });
  checkNames(m, file);
  return m;
}

/** A staged file's name: in the staging area (a shard's own, or the unsharded one), one entry deep. */
const STAGED_NAME = /^\.sluice-staged\/(shard-\d+-of-\d+\/)?[^/]+$/;

/**
 * Every name the manifest gives a unit, checked as written before anything acts on it (inside-output.ts): data files
 * relative to the output and none of sluice's own files, staged files in the staging area. The stores resolve them
 * on disk again before touching them (symbolic links).
 */
function checkNames(m: Manifest, file: string): void {
  const fix = `sluice writes ${file} itself, atomically, and names only files inside its output there: something else changed it. Check who can write to the output, then restore the manifest from a backup, or remove that unit's entry (the next run loads the unit again)`;
  for (const [id, u] of Object.entries(m.units)) {
    const at = (entry: string): NameSource => ({ file, entry: `unit ${JSON.stringify(id)} ${entry}`, fix });
    if (typeof u !== 'object' || u === null || !Array.isArray(u.files)) refuse(u, at('files'), 'not a list of files');
    u.files.forEach((f, i) => {
      const name = relativeName(f, at(`files[${i}]`));
      if (name.startsWith('.sluice') || path.posix.basename(name).startsWith('_sluice_'))
        refuse(name, at(`files[${i}]`), "one of sluice's own files, not a data file");
    });
    if (u.staged !== undefined && !STAGED_NAME.test(relativeName(u.staged?.file, at('staged.file'))))
      refuse(u.staged.file, at('staged.file'), 'not a file of the staging area .sluice-staged/');
    const range = u.staged && [u.staged.offset ?? 0, u.staged.bytes];
    if (range && !range.every((n) => Number.isSafeInteger(n) && n >= 0))
      refuse(range.join('+'), at('staged.offset/bytes'), 'not a range of bytes in its staging file');
  }
}

export async function writeManifest(dir: string, tmpDir: string, m: Manifest, name = MANIFEST_NAME): Promise<void> {
  await writeFileAtomic(path.join(dir, name), manifestText(m), tmpDir);
}

/** The manifest's text, stamped with the time of this write. */
export function manifestText(m: Manifest): string {
  m.updated_at = new Date().toISOString();
  return `${JSON.stringify(m, null, 1)}\n`;
}

/** Every data file the manifest names (relative paths). */
export function referencedFiles(m: Manifest): Set<string> {
  const out = new Set<string>();
  for (const u of Object.values(m.units)) for (const f of u.files) out.add(f);
  return out;
}
