/**
 * The crash matrix: `sluice run` killed with SIGKILL at every failpoint of the commit paths (src/core/failpoints.ts)
 * and from outside at a random moment mid-download, for a snapshot pipeline (four parts, two at a time) into each
 * sink — DuckDB append and merge, Parquet, JSONL, and `write: replace` of each kind — and a SERP crawl into DuckDB.
 * For each cell:
 *
 *  1. the run is spawned (the real CLI, in a child process) and must die by SIGKILL at the failpoint;
 *  2. right after the kill, what a reader sees must be whole: every file a glob lists reads completely, no record
 *     is visible twice, no more rows than a clean run's (`replace`: exactly the live generation, a complete run's);
 *     in DuckDB, the table holds exactly the rows its committed checkpoints account for;
 *  3. the same command is run again (no failpoint) until it succeeds — once must do — and the output must equal a
 *     clean run's (row count, distinct keys, a checksum DuckDB computes over every row, leaving out columns that
 *     differ between correct runs such as fetch times), with the paid filter job started exactly once over the
 *     crashed run and its rerun, and no crash leftovers (temp, staging, marker, generation or state temp files).
 *
 *   npx tsx bench/crash-matrix.ts [--parallel 3] [--only <part of a cell label>] [--quick] [--out out/crash-matrix.md]
 *                                [--keep]
 *
 * prints the table and writes it as Markdown (not with --only or --quick). test/reliability/crash-matrix/ runs the
 * cells of TEST_CELLS (--quick), or all of them with SLUICE_CRASH_MATRIX=full, and asserts them.
 *
 * Each cell has an emulator of its own in this process (same data seed), so its paid-call counters hold only that
 * cell's work; the children reach it over 127.0.0.1.
 *
 * Only the run that is killed needs a process of its own. The reruns, and the earlier run of a `replace` cell whose
 * output is not a DuckDB file, run the CLI's own entry (runCli) in this process: a child's start and DuckDB load
 * cost more than many a cell's checks. An earlier run into DuckDB stays a child: the DuckDB sink keeps the file open
 * in DuckDB's cache of the process that wrote it (sinks/duckdb/database.ts), where the killed run must open it next.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CliIo } from '../src/cli/io.js';
import { FAILPOINTS_ENV, type FailpointName } from '../src/core/failpoints.js';
import { redact } from '../src/core/redact.js';
import type { Logger } from '../src/core/types.js';
import { COMPANY_PROFILES_ID } from '../src/emulator/data/company-profiles.js';
import { startEmulator, type EmulatorHandle } from '../src/emulator/server.js';
import { runPipeline } from '../src/engine/run.js';
import { loadPipeline } from '../src/pipeline/load.js';
import { cliArg, inParallel, paidText } from './lib/matrix-common.js';
import { endedAs, runKilledAt, spawnRun, type Exit } from './lib/sluice-child.js';
import {
  isReplace,
  leftovers,
  outputDigest,
  sameDigest,
  sinkPath,
  visibleAfterKill,
  type Digest,
  type Output,
  type PipelineKind,
  type SinkKind,
} from './lib/crash-outputs.js';

export type { Digest, PipelineKind, SinkKind } from './lib/crash-outputs.js';

const API_KEY = 'crash-matrix-key';
const DATA_SEED = 7;
/** Four parts of 1,000 records, two read at a time: units commit before, during and after the kill. */
const RECORDS = 4000;
/**
 * Parquet cells (see twoFilesPerPublish): three parts of 2,500 records. DuckDB splits files only between row groups, and groups rows 2,048 at
 * a time at least: a part is two row groups, which files of PARQUET_FILE_BYTES put in two files. Each publish (one
 * part) then moves two files, so a kill can fall between their renames.
 */
const PARQUET_RECORDS = 7500;
const PARQUET_BATCH = 2500;
const SERP_QUERIES = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon'];
/**
 * Parquet publishes once the staged NDJSON would make a file of this size (at ~6 NDJSON bytes per Parquet byte):
 * small, so publishes happen during the run, one unit each.
 */
const PARQUET_FILE_BYTES = 150_000;
/**
 * JSONL publishes once its staged units make a file of this size: two parts (~3 MB each), so publishes happen during
 * the run, two units each.
 */
const JSONL_FILE_MB = 4;
/** Reruns after the crash at most; a cell passes only when the first one succeeds. */
const MAX_RERUNS = 3;
/**
 * Cells at once. The children are CPU-bound only part of the time (fsyncs, the filter job, polling): on 2 cores
 * shared with other work, an earlier 36-cell matrix took 122 s 3 at a time, 134 s 2 at a time.
 */
export const DEFAULT_PARALLEL = 3;
/** An outside kill comes this long at most after the emulator counted the second download (page, for a crawl). */
const MAX_KILL_DELAY_MS = 50;

/** `name` or `name=N` (see src/core/failpoints.ts). */
export type FailpointSpec = FailpointName | `${FailpointName}=${number}`;
/** At a failpoint, or a kill -9 sent from outside. */
export type Kill = { failpoint: FailpointSpec } | { external: true };

export interface CellSpec {
  pipeline: PipelineKind;
  sink: SinkKind;
  kill: Kill;
}

const external: Kill = { external: true };

/** A cell's pipeline and sink: cells with the same key share a clean run. */
function key(c: CellSpec): string {
  return `${c.pipeline}/${c.sink}`;
}

function cells(pipeline: PipelineKind, sink: SinkKind, failpoints: FailpointSpec[], outside = false): CellSpec[] {
  return [
    ...failpoints.map((failpoint) => ({ pipeline, sink, kill: { failpoint } })),
    ...(outside ? [{ pipeline, sink, kill: external }] : []),
  ];
}

/**
 * Every cell. Hits are chosen late enough that other units are committed or in flight (two parts are read at a
 * time), early enough that units remain to be read.
 */
export const CELLS: CellSpec[] = [
  // Snapshot → DuckDB append: the native JSONL load (no transform), and the paid job's checkpoints.
  ...cells(
    'snapshot',
    'duckdb',
    [
      'snapshot:job-started',
      'snapshot:job-checkpointed',
      'state:before-rename=4',
      'download:body=60000',
      'duckdb:after-data=2',
      'engine:after-commit=2',
      'engine:before-complete',
    ],
    true,
  ),
  // Snapshot → DuckDB merge: rows from a JS transform.
  ...cells('snapshot', 'duckdb_merge', ['download:body=60000', 'duckdb:after-data=3'], true),
  // Snapshot → Parquet: units are staged, then published several files at a time.
  ...cells(
    'snapshot',
    'parquet',
    [
      'download:body=60000',
      'parquet:staged=2',
      'files:before-manifest=1',
      'files:after-manifest=1',
      'files:after-rename=1',
    ],
    true,
  ),
  // Snapshot → JSONL: the native copy (no transform), units staged and published two to a file.
  ...cells(
    'snapshot',
    'jsonl',
    ['download:body=60000', 'files:before-manifest=2', 'files:after-manifest=2', 'files:after-rename=2'],
    true,
  ),
  // `write: replace`, over the output of an earlier complete run.
  ...cells('snapshot', 'duckdb_replace', ['duckdb:after-data=2', 'duckdb:replace-swap']),
  ...cells('snapshot', 'parquet_replace', ['files:after-rename=1', 'replace:before-swap', 'replace:after-swap']),
  // Killed after the swap but before the run is marked complete, the rerun is a new generation of its own.
  ...cells('snapshot', 'jsonl_replace', ['replace:before-swap', 'replace:after-swap', 'engine:before-complete']),
  // A SERP crawl: pages discovered while reading, into DuckDB.
  ...cells('serp', 'duckdb', ['crawl:successor-recorded=4', 'duckdb:after-data=5', 'engine:after-commit=4'], true),
];

/**
 * The cells `npm test` runs (test/reliability/crash-matrix/): the paid filter job killed on both sides of its
 * checkpoint, and the SERP crawl killed as it discovers a page and from outside. A kill in a sink's commit path is the
 * sink conformance suite's to strike, for every registered sink, in `npm test` (test/sinks/conformance/crash.test.ts
 * and the soak); the full matrix here strikes every failpoint in every sink kind too: `npx tsx bench/crash-matrix.ts`,
 * or `SLUICE_CRASH_MATRIX=full npm test` (CI runs it); `--quick` runs these.
 */
const TEST_CELL_KILLS: Record<string, (FailpointSpec | 'external')[]> = {
  'snapshot/duckdb': ['snapshot:job-started', 'snapshot:job-checkpointed'],
  'serp/duckdb': ['crawl:successor-recorded=4', 'external'],
};

export const TEST_CELLS: CellSpec[] = CELLS.filter((c) =>
  TEST_CELL_KILLS[key(c)]?.includes('external' in c.kill ? 'external' : c.kill.failpoint),
);
// A kill named above that CELLS does not have would silently shrink the test's matrix.
if (TEST_CELLS.length !== Object.values(TEST_CELL_KILLS).flat().length)
  throw new Error('TEST_CELL_KILLS names a cell that CELLS does not have');

export interface CellResult extends CellSpec {
  label: string;
  /** Died by SIGKILL at the failpoint (external: killed before it finished). */
  died: boolean;
  /** How the crash run ended when it did not die as planned. */
  endedAs?: string;
  /** External kills: ms after the emulator counted the second download. */
  killDelayMs?: number;
  /** Rows a reader saw right after the kill (undefined: nothing to read yet). */
  visibleRows: number | undefined;
  /** Complete data files visible right after the kill that the manifest did not commit (must be 0). */
  uncommittedFiles: number;
  /** Committed files not in place right after the kill; the rerun's open moves them in. */
  pendingFiles: number;
  /** What was wrong with what a reader saw right after the kill (partial files, duplicates, …). */
  visibleProblems: string[];
  /** Runs after the crash until one succeeded. */
  reruns: number;
  rerunSucceeded: boolean;
  /** The rerun found the filter job the killed run had started but not checkpointed (no second job). */
  recoveredJob: boolean;
  digest: Digest | undefined;
  clean: Digest;
  equal: boolean;
  /** Paid operations started by the crashed run and its reruns together. */
  paid: Record<string, number>;
  paidOnce: boolean;
  /** Temp, staging, marker, generation or state temp files left after the successful rerun. */
  leftovers: string[];
  failures: string[];
  seconds: number;
  /** Seconds per phase (the earlier run of `replace` cells, crash, checks, reruns), for the progress lines. */
  phases: Record<string, number>;
}

export interface MatrixResult {
  cells: CellResult[];
  seconds: number;
}

export interface MatrixOptions {
  cells?: CellSpec[];
  /** Cells run at once. */
  parallel?: number;
  progress?: (line: string) => void;
  /** Keep the cells' directories (pipeline, outputs, each run's stderr) for a look. */
  keep?: boolean;
}

export function cellLabel(c: CellSpec): string {
  return `${c.pipeline} → ${c.sink} @ ${'external' in c.kill ? 'kill -9 mid-download' : c.kill.failpoint}`;
}

export async function runCrashMatrix(opts: MatrixOptions = {}): Promise<MatrixResult> {
  const started = Date.now();
  const specs = opts.cells ?? CELLS;
  const parallel = opts.parallel ?? DEFAULT_PARALLEL;
  const root = mkdtempSync(path.join(tmpdir(), 'sluice-crash-matrix-'));
  try {
    // Clean outputs, made in this process; `replace` cells make their own with the run they start from. They are
    // made while the cells' crash runs (children) go on, and each cell waits for its own only after its kill.
    const kinds = [...new Map(specs.filter((c) => !isReplace(c.sink)).map((c) => [key(c), c])).values()];
    const clean = new Map<string, Promise<Digest>>();
    const made = new Map<string, (d: Promise<Digest>) => void>();
    for (const c of kinds) clean.set(key(c), new Promise((resolve) => made.set(key(c), resolve)));
    // A failed clean run fails its cells (runCell records the error); none is left unhandled meanwhile.
    for (const d of clean.values()) d.catch(() => undefined);
    const cleans = inParallel(kinds, parallel, async (c) => {
      const digest = cleanDigest(root, c);
      made.get(key(c))!(digest);
      await digest.catch(() => undefined);
    });
    const results = await inParallel(specs, parallel, async (c, i) => {
      const r = await runCell(path.join(root, `cell-${String(i).padStart(2, '0')}`), c, clean.get(key(c)));
      opts.progress?.(progressLine(r));
      return r;
    });
    await cleans;
    return { cells: results, seconds: (Date.now() - started) / 1000 };
  } finally {
    if (!opts.keep) rmSync(root, { recursive: true, force: true });
  }
}

/** The paid operations a run of the pipeline starts, each exactly once. */
const PAID: Record<PipelineKind, string[]> = { snapshot: ['filter'], serp: [] };

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

function emulatorOptions(): Parameters<typeof startEmulator>[0] {
  // Filter jobs take a fraction of a second at the real pace, which keeps the service clock the local one.
  return { apiKey: API_KEY, seed: DATA_SEED, size: 10_000, timeScale: 1, jobSchedulingMs: 100 };
}

/** Writes the cell's pipeline into `dir`; returns its output and the pipeline file. */
function writePipeline(dir: string, c: CellSpec, url: string): Output & { file: string } {
  const name = `cm_${c.pipeline}_${c.sink}`;
  const file = path.join(dir, 'pipeline.yaml');
  writeFileSync(file, pipelineYaml(name, c.pipeline, c.sink, url, twoFilesPerPublish(c)));
  return { dir, pipeline: c.pipeline, sink: c.sink, name, file };
}

/**
 * Whether the cell needs the Parquet sizes (PARQUET_RECORDS): every `parquet` cell (they share one clean run), and a
 * `parquet_replace` kill between the renames of a publish. A `parquet_replace` cell killed at the swap swaps a whole
 * generation however many files each publish made: RECORDS do, at half the data.
 */
function twoFilesPerPublish(c: CellSpec): boolean {
  if (c.sink === 'parquet') return true;
  return c.sink === 'parquet_replace' && 'failpoint' in c.kill && c.kill.failpoint.startsWith('files:after-rename');
}

function pipelineYaml(name: string, p: PipelineKind, s: SinkKind, url: string, parquetSized: boolean): string {
  const service = [
    'service:',
    `  base_url: ${url}`,
    `  api_key: ${API_KEY}`,
    '  retry: { retries: 4, base_delay_ms: 20, max_delay_ms: 1000 }',
  ];
  const source =
    p === 'snapshot'
      ? [
          'source:',
          '  type: snapshot',
          `  dataset_id: ${COMPANY_PROFILES_ID}`,
          "  filter: { name: followers, operator: '>', value: 0 }",
          `  records_limit: ${parquetSized ? PARQUET_RECORDS : RECORDS}`,
          `  download: { format: jsonl, compress: true, batch_size: ${parquetSized ? PARQUET_BATCH : 1000} }`,
          '  concurrency: 2',
          '  poll: { interval_ms: 20, timeout_s: 60 }',
          // Merge takes rows from a JS transform; the other sinks load the downloaded files natively.
          ...(s === 'duckdb_merge' ? ['transforms:', '  - { type: normalize, preset: company_profile }'] : []),
        ]
      : [
          'source:',
          '  type: serp',
          '  zone: serp_zone',
          '  engine: https://www.google.com',
          `  queries: ${JSON.stringify(SERP_QUERIES)}`,
          '  max_pages: 4',
          '  concurrency: 3',
          'transforms:',
          '  - { type: normalize, preset: serp_organic }',
        ];
  // `append` unless the cell is about merge or replace: a record written twice must show up, not be merged away.
  const where = `path: ${sinkPath(s)}`;
  const parquetSizes = `file_size_bytes: ${PARQUET_FILE_BYTES}, row_group_size: 1000`;
  const sink: Record<SinkKind, string> = {
    duckdb: `{ type: duckdb, ${where}, table: t }`,
    duckdb_merge: `{ type: duckdb, ${where}, table: t, write: merge, primary_key: [id] }`,
    duckdb_replace: `{ type: duckdb, ${where}, table: t, write: replace }`,
    parquet: `{ type: parquet, ${where}, ${parquetSizes} }`,
    parquet_replace: `{ type: parquet, ${where}, write: replace, ${parquetSizes} }`,
    jsonl: `{ type: jsonl, ${where}, target_file_mb: ${JSONL_FILE_MB} }`,
    jsonl_replace: `{ type: jsonl, ${where}, write: replace, target_file_mb: ${JSONL_FILE_MB} }`,
  };
  return ['version: 1', `name: ${name}`, ...service, ...source, `sink: ${sink[s]}`, ''].join('\n');
}

/**
 * `sluice run <file> --no-progress` as spawnRun runs it (same arguments, same environment, stdout dropped), but in
 * this process: the CLI's own entry with its stderr recorded. Never for the run a cell kills.
 */
async function runHere(file: string): Promise<Exit> {
  // Failpoints are armed once, from this process's environment, and kill the process they strike.
  if (process.env[FAILPOINTS_ENV]) throw new Error(`${FAILPOINTS_ENV} is set: unset it to run the crash matrix`);
  const { runCli } = await import('../src/cli/cli.js');
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
  if (d.rows === 0 || d.keys !== d.rows) throw new Error(`the clean run of ${key(c)} wrote ${JSON.stringify(d)}`);
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

/** It died where planned, nothing partial was visible, one rerun made the clean output, paid once, left nothing. */
export function cellPassed(c: CellResult): boolean {
  return (
    c.died &&
    c.visibleProblems.length === 0 &&
    c.rerunSucceeded &&
    c.reruns === 1 &&
    c.equal &&
    c.paidOnce &&
    c.leftovers.length === 0 &&
    c.failures.length === 0
  );
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

/** The matrix as a Markdown table, with totals. */
export function formatMatrix(r: MatrixResult): string {
  const head =
    '| pipeline | sink | killed at | died there | partial, uncommitted or duplicate data visible | rows visible after the kill | committed files not yet in place | reruns needed | rerun equal to clean | paid calls | leftovers after rerun |\n' +
    '|---|---|---|---|---|---:|---:|---:|---|---|---|';
  const rows = r.cells.map((c) => {
    const at =
      'external' in c.kill ? `kill -9 from outside, ${c.killDelayMs} ms after the 2nd download` : c.kill.failpoint;
    const paid = PAID[c.pipeline].length
      ? `${paidText(c.paid)}${c.paidOnce ? '' : ' (NOT once)'}${c.recoveredJob ? ' (job found by the rerun)' : ''}`
      : '—';
    return (
      `| ${c.pipeline} | ${c.sink} | ${at} | ${c.died ? 'yes' : `NO (${c.endedAs})`} | ` +
      `${c.visibleProblems.length ? `YES: ${c.visibleProblems.join('; ')}` : 'no'} | ` +
      `${c.visibleRows ?? 0} of ${c.clean.rows} | ${c.sink.startsWith('duckdb') ? '—' : c.pendingFiles} | ` +
      `${c.rerunSucceeded ? c.reruns : `${c.reruns} (all failed)`} | ${c.equal ? 'yes' : 'NO'} | ${paid} | ` +
      `${c.leftovers.length ? c.leftovers.join(' ') : 'none'} |`
    );
  });
  const clean = [...new Map(r.cells.map((c) => [key(c), c])).values()]
    .map((c) => `${c.pipeline} → ${c.sink} ${c.clean.rows} rows, ${c.clean.keys} keys, ${c.clean.checksum}`)
    .join('; ');
  const failed = r.cells.flatMap((c) => c.failures.map((f) => `- ${c.label}: ${f}`));
  return [
    `Crash matrix: ${r.cells.length} cells, each a \`sluice run\` killed with SIGKILL and then run again; ` +
      `${r.seconds.toFixed(0)} s.`,
    '',
    head,
    ...rows,
    '',
    `Passed: ${r.cells.filter(cellPassed).length}/${r.cells.length} (died at the failpoint, nothing partial or ` +
      'duplicated visible after the kill, one rerun gave the clean output, the paid filter job started once, no ' +
      'leftovers). A data file appears only after the manifest commits it; "committed files not yet in place": ' +
      'the kill came between the commit and the renames, and the rerun moved them in before anything else.',
    `Clean outputs: ${clean}.`,
    ...(failed.length ? ['', 'Failures:', ...failed] : []),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const only = cliArg('only');
  const quick = process.argv.includes('--quick');
  const out = cliArg('out') ?? 'out/crash-matrix.md';
  const parallel = cliArg('parallel');
  const base = quick ? TEST_CELLS : CELLS;
  const result = await runCrashMatrix({
    cells: only === undefined ? base : base.filter((c) => cellLabel(c).includes(only)),
    ...(parallel !== undefined && { parallel: Number(parallel) }),
    keep: process.argv.includes('--keep'),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  const table = formatMatrix(result);
  process.stdout.write(table);
  const cpu = process.cpuUsage();
  process.stderr.write(
    `this process (emulators, clean runs, checks): ${((cpu.user + cpu.system) / 1e6).toFixed(1)} CPU-s\n`,
  );
  if (only === undefined && !quick) {
    mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    writeFileSync(out, table);
    process.stderr.write(`written to ${out}\n`);
  }
  if (!result.cells.every(cellPassed)) process.exitCode = 1;
}
