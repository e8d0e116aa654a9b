/**
 * `mkdir -p` that names the filesystem's own error. Node's recursive mkdir answers ENOENT when a directory cannot be
 * made under a read-only or forbidden parent (it gives up on the level it could not create and reports that level's
 * absence), which sends a user looking for a missing path. Made one level at a time after such an ENOENT, the mkdir
 * that fails says why: EROFS, EACCES, ENOSPC.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

export async function makeDir(dir: string, mode?: number): Promise<void> {
  const opts = mode === undefined ? {} : { mode };
  try {
    await mkdir(dir, { ...opts, recursive: true });
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const parent = path.dirname(dir);
  if (parent !== dir) await makeDir(parent, mode);
  try {
    await mkdir(dir, opts);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
