/**
 * The project's TypeScript as plain JavaScript under node_modules/.cache/sluice-bench/js/ (where linters and git
 * do not look, and from where the project's dependencies resolve), so measuring children run on plain `node`:
 * tsx's loader adds ~30 MB to every process (a child importing the engine and sinks: 129 MB peak RSS under tsx,
 * 100 MB compiled), which would be charged to whatever the child measures.
 *
 * Each file is transpiled on its own (the project compiles with `isolatedModules`, so that is exact) and only when
 * its source is newer than its output: a rerun costs a directory walk. Type errors are `npx tsc --noEmit`'s job.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from './workload.js';

export const JS_DIR = path.join(ROOT, 'node_modules', '.cache', 'sluice-bench', 'js');
const SOURCE_DIRS = ['src', 'sinks', 'bench'];

/** Transpiles the files whose source changed since their last transpile. */
export async function transpileProject(): Promise<void> {
  for (const d of SOURCE_DIRS) await transpileDir(path.join(ROOT, d));
  // Node does not look for a package.json above node_modules/: this one makes the copies ES modules.
  await writeFile(path.join(JS_DIR, 'package.json'), '{ "type": "module" }\n');
}

/** Where the transpiled copy of `tsFile` (absolute, inside the project) is. */
export function compiledPath(tsFile: string): string {
  return path.join(JS_DIR, path.relative(ROOT, tsFile)).replace(/\.ts$/, '.js');
}

async function transpileDir(dir: string): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== '.work' && e.name !== 'node_modules') await transpileDir(p);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) await transpileFile(p);
  }
}

async function transpileFile(file: string): Promise<void> {
  const out = compiledPath(file);
  if (existsSync(out) && (await stat(out)).mtimeMs >= (await stat(file)).mtimeMs) return;
  const { outputText } = ts.transpileModule(await readFile(file, 'utf8'), {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
  });
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, outputText);
}
