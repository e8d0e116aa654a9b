/**
 * Durable file operations for the file sinks' commit protocol: a rename is only a commit once the file's bytes and
 * the directory entry are on disk, so both get an fsync.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../../core/errors.js';

export async function fsyncFile(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Makes renames and creations inside `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch (err) {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic there.
    if (!isErrno(err, 'EISDIR', 'EINVAL', 'EPERM')) throw err;
  } finally {
    await fh?.close();
  }
}

/** Writes `target` through a temp file in `tmpDir` (same filesystem): readers see the old or the new content. */
export async function writeFileAtomic(target: string, data: string, tmpDir: string): Promise<void> {
  const tmp = path.join(tmpDir, `${path.basename(target)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, data);
    await fsyncFile(tmp);
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(target));
}

/** Creates `dir` (and parents) and checks it can be written, or says which path and what to do. */
export async function ensureWritableDir(dir: string, what: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SluiceError(`${what}: cannot write to ${dir} (${code})`, {
      hint:
        code === 'ENOTDIR' || code === 'EEXIST'
          ? `a file is in the way: point \`path\` at a directory, or move that file`
          : `give the user running sluice write access to ${dir}, or point \`path\` somewhere writable`,
      cause: err,
    });
  }
}

export function isErrno(err: unknown, ...codes: string[]): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && codes.includes(code);
}
