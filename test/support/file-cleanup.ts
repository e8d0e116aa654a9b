/**
 * Directories a test helper made for the test file now running, removed after that file (test/setup-per-file.ts).
 * A helper module is imported once per worker process, which runs many files one after another: a hook it registered
 * at import would run after the first file only, and the later files' directories would be left behind.
 */
import { rmSync } from 'node:fs';

const dirs: string[] = [];

/** Removes `dir` after the current test file, unless `keepVariable` names a variable that is set. */
export function removeAfterFile(dir: string, keepVariable?: string): void {
  if (keepVariable === undefined || !process.env[keepVariable]) dirs.push(dir);
}

export function removeFileDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}
