/**
 * The one gate between a name sluice read from one of its own files — a manifest's data and staging files, a commit
 * marker's moves and removals, a generation pointer, an upload journal — and the path or key it acts on.
 *
 * Those files sit in the output directory or bucket prefix, which other people and programs may write to (a shared
 * directory, a prefix with broad write access): a name in them is data, not an instruction. So every such name is
 * resolved here against the output's root and refused unless it stays inside, before anything is read, renamed or
 * deleted: `..` segments, absolute paths, backslashes, NUL bytes, empty names and names for the root itself are
 * refused as written (local and S3 alike); locally, a name whose real path leaves the root through a symbolic link
 * (a linked directory inside the output, or the file itself a link) is refused too. The error names the file the
 * name was read from and says what to do.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { EXIT_CODES, SluiceError } from '../../core/errors.js';
import { isErrno } from './fs-durable.js';

/** Where a name was read: the file (a path or an `s3://` URL) and the entry in it, for the message. */
export interface NameSource {
  /** The file the name was read from: `/out/_sluice_manifest.json`, `s3://b/p/.sluice-tmp/c.pending`. */
  file: string;
  /** The entry that holds it: `unit "…" files[0]`, `moves[1].to`. */
  entry: string;
  /** What to do instead of the default (restore or remove the file). */
  fix?: string;
}

/**
 * A name in one of sluice's own files that would leave the output. Nothing was touched because of it; rerunning
 * gives the same answer until the file is restored or removed (exit 2, as for a wrong pipeline file).
 */
export class UnsafeNameError extends SluiceError {
  override readonly name = 'UnsafeNameError';
}

/** Throws the UnsafeNameError for `name`, read at `src`, refused because of `why`. */
export function refuse(name: unknown, src: NameSource, why: string): never {
  const kind = name === null ? 'null' : Array.isArray(name) ? 'list' : typeof name;
  const shown = typeof name === 'string' ? JSON.stringify(name) : `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}`;
  throw new UnsafeNameError(`${src.file}: ${src.entry} names ${shown}, ${why}: refused, nothing was touched`, {
    hint:
      src.fix ??
      `sluice writes this file itself and never names anything outside its output in it: something else changed it. Check who can write there, then restore ${src.file} from a backup or remove it, and run again`,
    exitCode: EXIT_CODES.config,
  });
}

/**
 * `name` as a relative, `/`-separated name inside a root, checked as written (no file system is consulted): a
 * non-empty string with no NUL byte, no backslash, not absolute, and no empty, `.` or `..` segment. Returns it.
 */
export function relativeName(name: unknown, src: NameSource): string {
  if (typeof name !== 'string') return refuse(name, src, 'not a name');
  if (name === '') return refuse(name, src, 'an empty name');
  if (name.includes('\0')) return refuse(name, src, 'a name with a NUL byte');
  if (name.includes('\\')) return refuse(name, src, 'a name with a backslash');
  if (name.startsWith('/')) return refuse(name, src, 'an absolute path');
  const segments = name.split('/');
  if (segments.includes('..')) return refuse(name, src, 'a path that climbs out with `..`');
  if (segments.some((s) => s === '' || s === '.')) return refuse(name, src, 'a name with an empty or `.` segment');
  return name;
}

/** `name` as one directory entry (a generation's name): a relative name without `/`. */
export function entryName(name: unknown, src: NameSource): string {
  const rel = relativeName(name, src);
  if (rel.includes('/')) return refuse(name, src, 'a name with `/` where one directory entry belongs');
  return rel;
}

/**
 * The local path of `name` under the directory `root`: checked as written (`relativeName`), then resolved on disk —
 * the longest part of it that exists, symbolic links followed — and refused unless that real path lies inside the
 * real `root`. The path returned is `root` joined with the name (links are acted on, not their targets).
 */
export async function insidePath(root: string, name: unknown, src: NameSource): Promise<string> {
  const rel = relativeName(name, src);
  const full = path.join(root, rel);
  const realRoot = await realpath(root);
  const { real, exact } = await realExisting(full, root);
  // A name not there yet resolves through its nearest ancestor, which may be the root itself.
  if (real === realRoot && exact) return refuse(name, src, `a link to the output directory ${root} itself`);
  if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`))
    return refuse(name, src, `which a symbolic link under ${root} leads to ${real}, outside it`);
  return full;
}

/**
 * A directory sluice makes itself and clears wholesale (its temp and staging areas, the generations directory):
 * `name` under `root`, with no symbolic link on the way to it, or refused — a link to another place, even one inside
 * the output, would have that place's entries removed. Returns its path.
 */
export async function ownDirectory(root: string, name: string, src: NameSource): Promise<string> {
  const full = await insidePath(root, name, src);
  const { real, exact } = await realExisting(full, root);
  const expected = exact ? path.join(await realpath(root), name) : undefined;
  if (expected !== undefined && real !== expected)
    return refuse(name, src, `a symbolic link (to ${real}) where sluice keeps a directory of its own`);
  return full;
}

/** The real path of `p` (`exact`), or of its nearest ancestor that exists (`stop` is taken to exist). */
async function realExisting(p: string, stop: string): Promise<{ real: string; exact: boolean }> {
  for (let cur = p; ; cur = path.dirname(cur)) {
    try {
      return { real: await realpath(cur), exact: cur === p };
    } catch (err) {
      if (!isErrno(err, 'ENOENT', 'ENOTDIR') || cur === stop || cur === path.dirname(cur)) throw err;
    }
  }
}

/** Each of `names` resolved by `insidePath`; the first that fails throws, so none is acted on before all pass. */
export async function insidePaths(root: string, names: readonly string[], src: NameSource): Promise<string[]> {
  const out: string[] = [];
  for (const n of names) out.push(await insidePath(root, n, src));
  return out;
}

/**
 * A key read from a file, which must lie under `prefix` (keys relative to the output's prefix): returns what follows
 * `prefix`, checked as a relative name.
 */
export function keyUnder(prefix: string, key: unknown, src: NameSource): string {
  if (typeof key !== 'string') return refuse(key, src, 'not a key');
  if (!key.startsWith(prefix)) return refuse(key, src, `a key outside ${prefix === '' ? 'the output' : prefix}`);
  return relativeName(key.slice(prefix.length), src);
}

/** The key of `name` under `prefix` (`''` or ending in `/`), `name` checked as a relative name. */
export function keyOf(prefix: string, name: unknown, src: NameSource): string {
  return `${prefix}${relativeName(name, src)}`;
}
