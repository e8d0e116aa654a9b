/**
 * Once before the suite: the servers that come from system packages are installed where they can be
 * (support/system-packages.ts), and the compiled CLI is built. Tests spawn `bin/sluice.js`, which runs `dist/src/cli/main.js`:
 * without this build a test would exercise whatever was compiled last, not the source under test.
 *
 * The build is `npm run build`'s (tsconfig.build.json, through the TypeScript API), made incremental with its build
 * info inside dist/ (deleting dist/ then forgets it too, so tsc never trusts info about files that are gone), and
 * without type checking: type errors are for `npm run typecheck` to report, not a reason to test stale JavaScript.
 * When no source, config or folder is newer than the last build, not even that runs: an unchanged tree costs a
 * directory walk.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { installMissing, installNotice } from './support/system-packages.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'dist');
/** What bin/sluice.js imports. */
export const CLI_ENTRY = path.join(DIST, 'src/cli/main.js');
const BUILD_INFO = path.join(DIST, '.tsbuildinfo');
/** Written after each build this setup made: its mtime is when dist/ last matched the sources. */
const STAMP = path.join(DIST, '.built-for-tests');
/** Other test runs (several shells, several helpers) may build at the same moment: one at a time writes dist/. */
const LOCK = path.join(DIST, '.build-lock');
const LOCK_STALE_MS = 180_000;
const INPUTS = ['src', 'sinks', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** Each project of vitest.config.ts runs the global setup, in the same process: what is per run is done once. */
const RUN_SET_UP = Symbol.for('sluice.test.run-set-up');

export default async function setup(): Promise<(() => void) | undefined> {
  const run = globalThis as { [RUN_SET_UP]?: boolean };
  let teardown: (() => void) | undefined;
  if (!run[RUN_SET_UP]) {
    run[RUN_SET_UP] = true;
    // Once, at the top of the run: the servers from system packages the suite runs (support/system-packages.ts).
    const notice = installNotice(installMissing());
    if (notice !== undefined) process.stderr.write(notice);
    teardown = ownWorkDir();
  }
  await buildCompiledCli();
  return teardown;
}

/**
 * A working directory of the run's own (SLUICE_WORK_DIR, inherited by the workers and the CLIs they spawn): an S3
 * output's lock lives there, named by bucket and prefix alone, and every test's S3 server has the same buckets, so
 * two test runs on one machine (two checkouts, two shells) would otherwise hold each other's locks and fail
 * "locked". Unless the caller set one.
 */
function ownWorkDir(): (() => void) | undefined {
  if (process.env.SLUICE_WORK_DIR) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-test-work-'));
  process.env.SLUICE_WORK_DIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}

async function buildCompiledCli(): Promise<void> {
  if (upToDate()) return;
  mkdirSync(DIST, { recursive: true });
  await takeLock();
  try {
    // Another run may have built while this one waited.
    if (!upToDate()) build();
  } finally {
    rmSync(LOCK, { force: true });
  }
}

function build(): void {
  const started = Date.now();
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.build.json'),
    // Type errors are `npm run typecheck`'s to report: without checking, an unchanged tree costs only its parse.
    { incremental: true, tsBuildInfoFile: BUILD_INFO, noCheck: true },
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) },
  );
  if (!config) throw new Error('tsconfig.build.json could not be read');
  if (config.errors.length > 0) fail(config.errors);
  const program = ts.createIncrementalProgram({
    rootNames: config.fileNames,
    options: config.options,
    configFileParsingDiagnostics: config.errors,
  });
  const emitted = program.emit(undefined, writeAtomically);
  if (emitted.emitSkipped || emitted.diagnostics.length > 0 || !existsSync(CLI_ENTRY)) fail(emitted.diagnostics);
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  process.stderr.write(
    `global setup: compiled the CLI into dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

/**
 * Each output file appears whole: a CLI that another test run spawned meanwhile must never import a half-written
 * module.
 */
function writeAtomically(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, file);
}

function fail(diagnostics: readonly ts.Diagnostic[]): never {
  const text = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => ROOT,
    getNewLine: () => '\n',
  });
  throw new Error(
    `building the CLI for the tests failed:\n${text || `no ${path.relative(ROOT, CLI_ENTRY)} was written`}`,
  );
}

/**
 * dist/ was built — by this setup, or by `npm run build` when it keeps its build info at the same place — after the
 * last change to any input (a deleted file changes its folder's mtime).
 */
function upToDate(): boolean {
  if (!existsSync(CLI_ENTRY)) return false;
  const built = Math.max(...[STAMP, BUILD_INFO].map((f) => (existsSync(f) ? statSync(f).mtimeMs : 0)));
  return INPUTS.every((p) => !changedSince(path.join(ROOT, p), built));
}

function changedSince(p: string, since: number): boolean {
  if (!existsSync(p)) return false;
  const st = statSync(p);
  if (st.mtimeMs > since) return true;
  if (!st.isDirectory()) return false;
  return readdirSync(p).some((name) => changedSince(path.join(p, name), since));
}

async function takeLock(): Promise<void> {
  for (;;) {
    try {
      closeSync(openSync(LOCK, 'wx'));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // A lock left by a run that was killed mid-build would otherwise stop every later run.
    try {
      if (Date.now() - statSync(LOCK).mtimeMs > LOCK_STALE_MS) rmSync(LOCK, { force: true });
    } catch {
      // Released between the open and the stat: try again.
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
