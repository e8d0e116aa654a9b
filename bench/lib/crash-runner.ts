/**
 * Runs the crash matrix's cells (bench/crash-matrix.ts): per cell, an emulator of its own, the run killed in a child
 * process, what a reader sees right after the kill, reruns in this process until one succeeds, and the checks of
 * its output against a clean run's.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CliIo } from '../../src/cli/io.js';
import { FAILPOINTS_ENV } from '../../src/core/failpoints.js';
import { redact } from '../../src/core/redact.js';
import type { Logger } from '../../src/core/types.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import {
  CELLS,
  PAID,
  cellKey,
  cellLabel,
  type CellResult,
  type CellSpec,
  type Kill,
  type MatrixOptions,
  type MatrixResult,
} from './crash-cells.js';
import { isReplace, leftovers, outputDigest, sameDigest, visibleAfterKill, type Digest } from './crash-outputs.js';
import { emulatorOptions, writePipeline } from './crash-pipeline.js';
import { inParallel, paidText } from './matrix-common.js';
import { endedAs, runKilledAt, spawnRun, type Exit } from './sluice-child.js';

/** Reruns after the crash at most; a cell passes only when the first one succeeds. */
const MAX_RERUNS = 3;
/**
 * Cells at once. The children are CPU-bound only part of the time (fsyncs, the filter job, polling): on 2 cores
 * shared with other work, an earlier 36-cell matrix took 122 s 3 at a time, 134 s 2 at a time.
 */
export const DEFAULT_PARALLEL = 3;
/** An outside kill comes this long at most after the emulator counted the second download (page, for a crawl). */
const MAX_KILL_DELAY_MS = 50;

export async function runCrashMatrix(opts: MatrixOptions = {}): Promise<MatrixResult> {
  const started = Date.now();
  const specs = opts.cells ?? CELLS;
  const parallel = opts.parallel ?? DEFAULT_PARALLEL;
  const root = mkdtempSync(path.join(tmpdir(), 'sluice-crash-matrix-'));
  try {
    // Clean outputs, made in this process; `replace` cells make their own with the run they start from. They are
    // made while the cells' crash runs (children) go on, and each cell waits for its own only after its kill.
    const kinds = [...new Map(specs.filter((c) => !isReplace(c.sink)).map((c) => [cellKey(c), c])).values()];
    const clean = new Map<string, Promise<Digest>>();
    const made = new Map<string, (d: Promise<Digest>) => void>();
    for (const c of kinds) clean.set(cellKey(c), new Promise((resolve) => made.set(cellKey(c), resolve)));
    // A failed clean run fails its cells (runCell records the error); none is left unhandled meanwhile.
    for (const d of clean.values()) d.catch(() => undefined);
    const cleans = inParallel(kinds, parallel, async (c) => {
      const digest = cleanDigest(root, c);
      made.get(cellKey(c))!(digest);
      await digest.catch(() => undefined);
    });
    const results = await inParallel(specs, parallel, async (c, i) => {
      const r = await runCell(path.join(root, `cell-${String(i).padStart(2, '0')}`), c, clean.get(cellKey(c)));
      opts.progress?.(progressLine(r));
      return r;
    });
    await cleans;
    return { cells: results, seconds: (Date.now() - started) / 1000 };
  } finally {
    if (!opts.keep) rmSync(root, { recursive: true, force: true });
  }
}

async function runCell(dir: string, spec: CellSpec, cleanRun: Promise<Digest> | undefined): Promise<CellResult> {
  const t0 = Date.now();
  mkdirSync(dir, { recursive: true });
  const r: CellResult = {
    ...spec,
    label: cellLabel(spec),
    died: false,
    visibleRows: undefined,
    uncommittedFiles: 0,
    pendingFiles: 0,
    visibleProblems: [],
    reruns: 0,
    rerunSucceeded: false,
    recoveredJob: false,
    digest: undefined,
    clean: { rows: 0, keys: 0, checksum: '' },
    equal: false,
    paid: {},
    paidOnce: false,
    leftovers: [],
    failures: [],
    seconds: 0,
    phases: {},
  };
  let mark = Date.now();
  const phase = (name: string): void => {
    r.phases[name] = (Date.now() - mark) / 1000;
    mark = Date.now();
  };
  const emu = await startEmulator(emulatorOptions());
  const output = writePipeline(dir, spec, emu.url);
  writeFileSync(path.join(dir, 'cell.txt'), `${r.label}\n`);
  try {
    if (isReplace(spec.sink)) {
      // The earlier, complete run whose output readers must keep seeing until the new one is swapped in.
      const first = spec.sink.startsWith('duckdb') ? await spawnRun(output.file, {}).done : await runHere(output.file);
      if (first.code !== 0) throw new Error(`the earlier (clean) run failed: ${lastLines(first.stderr)}`);
      r.clean = await outputDigest(output);
      phase('earlier run');
    }
    const paidBefore = { ...emu.stats.paid };

    const crash = await crashRun(output.file, spec.kill, emu);
    r.died = crash.died;
    if (crash.killDelayMs !== undefined) r.killDelayMs = crash.killDelayMs;
    if (!crash.died) r.endedAs = crash.endedAs;
    writeFileSync(path.join(dir, 'crash.stderr.txt'), crash.stderr);
    phase('crash');
    if (cleanRun) {
      r.clean = await cleanRun;
      phase('clean run');
    }

    const visible = await visibleAfterKill(output, r.clean);
    r.visibleRows = visible.rows;
    r.uncommittedFiles = visible.uncommittedFiles;
    r.pendingFiles = visible.pendingFiles;
    r.visibleProblems = visible.problems;
    phase('read after kill');

    while (!r.rerunSucceeded && r.reruns < MAX_RERUNS) {
      r.reruns++;
      const again = await runHere(output.file);
      writeFileSync(path.join(dir, `rerun-${r.reruns}.stderr.txt`), again.stderr);
      if (again.stderr.includes('recovered the lost answer of the filter call')) r.recoveredJob = true;
      if (again.code === 0) r.rerunSucceeded = true;
      else r.failures.push(`rerun ${r.reruns}: ${again.signal ?? `exit ${again.code}`}: ${lastLines(again.stderr)}`);
    }
    phase('rerun');
    r.paid = diff(emu.stats.paid, paidBefore);
    const needed = PAID[spec.pipeline];
    r.paidOnce = needed.every((k) => r.paid[k] === 1) && Object.keys(r.paid).every((k) => needed.includes(k));
    if (r.rerunSucceeded) {
      r.digest = await outputDigest(output);
      r.equal = sameDigest(r.digest, r.clean);
      r.leftovers = leftovers(output);
      phase('digest');
    }
  } catch (err) {
    r.failures.push(err instanceof Error ? err.message : String(err));
  } finally {
    await emu.close();
    r.seconds = (Date.now() - t0) / 1000;
  }
  return r;
}

/**
 * `sluice run <file> --no-progress` as spawnRun runs it (same arguments, same environment, stdout dropped), but in
 * this process: the CLI's own entry with its stderr recorded. Never for the run a cell kills.
 */
async function runHere(file: string): Promise<Exit> {
  // Failpoints are armed once, from this process's environment, and kill the process they strike.
  if (process.env[FAILPOINTS_ENV]) throw new Error(`${FAILPOINTS_ENV} is set: unset it to run the crash matrix`);
  const { runCli } = await import('../../src/cli/cli.js');
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of [FAILPOINTS_ENV, 'SLUICE_BASE_URL', 'SLUICE_API_KEY']) delete env[k];
  let stderr = '';
  const io: CliIo = {
    out: () => undefined,
    err: (text) => void (stderr += `${redact(text)}\n`),
    env,
    columns: 100,
    untilStopped: () => new Promise<void>(() => undefined),
    interrupts: () => ({ signal: new AbortController().signal, release: () => undefined }),
  };
  const code = await runCli(['run', file, '--no-progress'], io);
  return { code, signal: null, stderr };
}

async function crashRun(
  file: string,
  kill: Kill,
  emu: EmulatorHandle,
): Promise<{ died: boolean; endedAs?: string; killDelayMs?: number; stderr: string }> {
  if ('failpoint' in kill) return runKilledAt(file, kill.failpoint);
  const { child, done } = spawnRun(file, {});
  const counted = (): number =>
    (emu.stats.routes['GET /datasets/snapshots/:id/download'] ?? 0) + (emu.stats.routes['POST /request'] ?? 0);
  const before = counted();
  const delay = Math.floor(Math.random() * MAX_KILL_DELAY_MS);
  let killed = false;
  const watch = setInterval(() => {
    if (counted() - before < 2) return;
    clearInterval(watch);
    setTimeout(() => (killed = child.kill('SIGKILL')), delay);
  }, 2);
  const x = await done;
  clearInterval(watch);
  const died = killed && x.signal === 'SIGKILL';
  return { died, ...(!died && { endedAs: endedAs(x) }), killDelayMs: delay, stderr: x.stderr };
}

/** A clean run in this process, into a directory of its own, and its digest. */
async function cleanDigest(root: string, c: CellSpec): Promise<Digest> {
  const dir = path.join(root, `clean-${c.pipeline}-${c.sink}`);
  mkdirSync(dir, { recursive: true });
  const emu = await startEmulator(emulatorOptions());
  const output = writePipeline(dir, c, emu.url);
  try {
    await runPipeline(
      await loadPipeline(output.file, {}),
      { fresh: false, logFormat: 'text', quiet: true, progress: false },
      { log: silent },
    );
  } finally {
    await emu.close();
  }
  const d = await outputDigest(output, true);
  if (d.rows === 0 || d.keys !== d.rows) throw new Error(`the clean run of ${cellKey(c)} wrote ${JSON.stringify(d)}`);
  return d;
}

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(after)) if (n - (before[k] ?? 0) > 0) out[k] = n - (before[k] ?? 0);
  return out;
}

function lastLines(stderr: string): string {
  return stderr.trimEnd().split('\n').slice(-2).join(' / ');
}

function progressLine(r: CellResult): string {
  const phases = Object.entries(r.phases)
    .map(([k, s]) => `${k} ${s.toFixed(1)}`)
    .join(', ');
  return (
    `${r.label}: ${r.died ? 'died' : `DID NOT DIE (${r.endedAs})`}, ` +
    `${r.visibleProblems.length ? `AFTER THE KILL: ${r.visibleProblems.join('; ')}` : 'nothing partial visible'}, ` +
    `${r.equal ? 'equal' : 'DIFFERENT'} after ${r.reruns} rerun(s), paid ${paidText(r.paid)}` +
    `${r.leftovers.length ? `, LEFTOVERS ${r.leftovers.join(' ')}` : ''}` +
    `${r.failures.length ? `, FAILED: ${r.failures.join(' / ')}` : ''} (${r.seconds.toFixed(1)} s: ${phases})`
  );
}
