/**
 * A directory the filesystem itself refuses to write: an empty tmpfs mounted read-only (EROFS for everyone, root
 * included: the tests run as root, where chmod stops nothing). Needs mount rights (root, CAP_SYS_ADMIN); where the
 * mount is refused, `readOnlyDir` returns undefined and says why, and the caller skips its test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ReadOnlyDir {
  path: string;
  release(): void;
}

export function readOnlyDir(): ReadOnlyDir | { unavailable: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-read-only-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m,mode=0755', 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return { unavailable: `cannot mount a read-only tmpfs here: ${stderr || (err as Error).message}` };
  }
  return {
    path: dir,
    release: () => {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
