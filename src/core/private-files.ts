/**
 * Files and directories only the user running sluice may read: run state, run history, dead letters and staged
 * data hold raw records and job ids, whatever the umask says. A directory that may already exist under a parent
 * other users can write is checked before it is used: another local user must not be able to plant it (their
 * directory would receive our data, their lock file could stop our runs).
 */
import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { chmod, stat } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { SluiceError } from './errors.js';

export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

/** Group or others may do anything with it. */
const SHARED_BITS = 0o077;

/** Takes group and others' access away from `file` when this user owns it (one an older version created). */
export async function makePrivate(file: string): Promise<void> {
  const st = await stat(file);
  if ((st.mode & SHARED_BITS) !== 0 && st.uid === process.getuid?.()) await chmod(file, st.mode & 0o700);
}

/**
 * Creates `dir` (and its parents) for this user alone, or checks the one that is there: a real directory (not a
 * symlink), owned by this user — tightened to 0700 when it is ours but open to others. Throws a SluiceError naming
 * the directory otherwise.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  const unsafe = st.isSymbolicLink()
    ? 'it is a symbolic link'
    : !st.isDirectory()
      ? 'it is not a directory'
      : uid !== undefined && st.uid !== uid
        ? `it belongs to another user (uid ${st.uid})`
        : undefined;
  if (unsafe !== undefined)
    throw new SluiceError(`the working directory ${dir} cannot be trusted: ${unsafe}`, {
      hint: `remove ${dir} (another user may have made it to receive this user's data or stop its runs), or set SLUICE_WORK_DIR to a directory of your own`,
    });
  if ((st.mode & SHARED_BITS) !== 0) chmodSync(dir, PRIVATE_DIR);
}

let workRoot: string | undefined;

/**
 * This user's working directory (S3 outputs' local staging and locks), checked by `ensurePrivateDir`:
 * `SLUICE_WORK_DIR` when set; else `$XDG_CACHE_HOME/sluice` or `~/.cache/sluice`, which no other user can create;
 * only when the home directory is unusable (a container's read-only or missing home), `<tmp>/sluice-<uid>` — a
 * name another user could take first, which the check then refuses rather than use.
 */
export function privateWorkRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (workRoot !== undefined && env === process.env) return workRoot;
  const uid = process.getuid?.() ?? 'user';
  const home = safeHome();
  const candidates = env.SLUICE_WORK_DIR
    ? [env.SLUICE_WORK_DIR]
    : [
        ...(env.XDG_CACHE_HOME ? [path.join(env.XDG_CACHE_HOME, 'sluice')] : []),
        ...(home ? [path.join(home, '.cache', 'sluice')] : []),
        path.join(tmpdir(), `sluice-${uid}`),
      ];
  let lastError: unknown;
  for (const dir of candidates) {
    try {
      ensurePrivateDir(dir);
      if (env === process.env) workRoot = dir;
      return dir;
    } catch (err) {
      // A directory another user controls is refused outright; one that cannot be made (read-only) is skipped.
      if (err instanceof SluiceError) throw err;
      lastError = err;
    }
  }
  throw new SluiceError(`no working directory could be created (${candidates.join(', ')})`, {
    hint: 'set SLUICE_WORK_DIR to a writable directory of your own',
    cause: lastError,
  });
}

function safeHome(): string | undefined {
  try {
    const home = homedir();
    return home && home !== '/' ? home : undefined;
  } catch {
    return undefined;
  }
}
