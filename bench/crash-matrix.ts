/**
 * The crash matrix: `sluice run` killed with SIGKILL at every failpoint of the commit paths (src/core/failpoints.ts)
 * and from outside at a random moment mid-download, for a snapshot pipeline (several parts, two at a time) into
 * each sink — DuckDB append and merge, Parquet, JSONL, and `write: replace` of each kind — and a SERP crawl into
 * DuckDB. For each cell:
 *
 *  1. the run is spawned (the real CLI, in a child process) and must die by SIGKILL at the failpoint;
 *  2. right after the kill, what a reader sees must be complete: every file a glob reader lists reads whole, no
 *     record is visible twice, and no more rows than a clean run's (`replace`: exactly the live generation, which
 *     is a clean run's output); in DuckDB, the table holds exactly the rows its checkpoints account for;
 *  3. the same command is run again (no failpoint) until it succeeds, and the output must equal a clean run's —
 *     row count, distinct keys and a checksum computed by DuckDB over every row (columns that legitimately differ
 *     between runs, such as fetch times, left out) — with the paid filter job started exactly once and no crash
 *     leftovers (temp, staging, marker or generation files).
 *
 *   npx tsx bench/crash-matrix.ts [--parallel 2] [--only <substring of a cell label>] [--out out/crash-matrix.md] [--keep]
 *
 * prints the table and writes it as Markdown. test/reliability/crash-matrix.test.ts runs the same matrix and
 * asserts it.
 *
 * Each cell has an emulator of its own in this process (same data seed), so its paid-call counters hold only that
 * cell's work; the children reach it over 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { FAILPOINTS_ENV, type FailpointName } from '../src/core/failpoints.js';
import type { Logger } from '../src/core/types.js';
import { COMPANY_PROFILES_ID } from '../src/emulator/data/company-profiles.js';
import { startEmulator, type EmulatorHandle } from '../src/emulator/server.js';
import { runPipeline } from '../src/engine/run.js';
import { loadPipeline } from '../src/pipeline/load.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'bin/sluice.js');
const API_KEY = 'crash-matrix-key';
const DATA_SEED = 7;
/** Five parts of 1,000 records: enough for units to commit before, during and after the kill. */
const RECORDS = 5000;
const SERP_QUERIES = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon'];
/**
 * Parquet publishes when the staged NDJSON would make a file of this size (at ~6 NDJSON bytes per Parquet byte):
 * small, so publishes happen during the run and each writes several files — the publish failpoints need both.
 */
const PARQUET_FILE_BYTES = 150_000;
/** Reruns after the crash, at most: one must do. */
const MAX_RERUNS = 3;

export const SINKS = [
  'duckdb',
  'duckdb_merge',
  'parquet',
  'jsonl',
  'duckdb_replace',
  'parquet_replace',
  'jsonl_replace',
] as const;
export type SinkKind = (typeof SINKS)[number];
export type PipelineKind = 'snapshot' | 'serp';

/** `name` or `name=N` (see src/core/failpoints.ts). */
export type FailpointSpec = FailpointName | `${FailpointName}=${number}`;
/** At a failpoint, or a kill -9 sent from outside. */
export type Kill = { failpoint: FailpointSpec } | { external: true };

export interface CellSpec {
  pipeline: PipelineKind;
  sink: SinkKind;
  kill: Kill;
}

const fp = (failpoint: FailpointSpec): Kill => ({ failpoint });
const external: Kill = { external: true };

/**
 * Every cell, with the hit at which it dies: late enough that other units are committed or in flight (two parts
 * are read at a time), early enough that units remain to be read.
 */
export const CELLS: CellSpec[] = [
  // Snapshot → DuckDB append (the native JSONL load: no transform).
  ...(
    [
      'snapshot:job-started',
      'snapshot:job-checkpointed',
      'state:before-rename=4',
      'download:body=60000',
      'duckdb:after-data=2',
      'engine:after-commit=2',
      'engine:before-complete',
    ] as const
  ).map((f) => ({ pipeline: 'snapshot' as const, sink: 'duckdb' as const, kill: fp(f) })),
  { pipeline: 'snapshot', sink: 'duckdb', kill: external },
  // Snapshot → DuckDB merge (rows through a JS transform).
  ...(['download:body=60000', 'duckdb:after-data=3'] as const).map((f) => ({
    pipeline: 'snapshot' as const,
    sink: 'duckdb_merge' as const,
    kill: fp(f),
  })),
  { pipeline: 'snapshot', sink: 'duckdb_merge', kill: external },
  // Snapshot → Parquet: units are staged, then published several files at a time.
  ...(
    [
      'download:body=60000',
      'parquet:staged=2',
      'files:before-rename=1',
      'files:after-rename=1',
      'files:before-manifest=1',
      'files:after-manifest=1',
      'engine:before-complete',
    ] as const
  ).map((f) => ({ pipeline: 'snapshot' as const, sink: 'parquet' as const, kill: fp(f) })),
  { pipeline: 'snapshot', sink: 'parquet', kill: external },
  // Snapshot → JSONL (the native copy: no transform).
  ...(
    [
      'download:body=60000',
      'files:before-rename=2',
      'files:after-rename=2',
      'files:after-manifest=2',
      'engine:after-commit=2',
    ] as const
  ).map((f) => ({ pipeline: 'snapshot' as const, sink: 'jsonl' as const, kill: fp(f) })),
  { pipeline: 'snapshot', sink: 'jsonl', kill: external },
  // `write: replace`, over the output of an earlier complete run.
  { pipeline: 'snapshot', sink: 'duckdb_replace', kill: fp('duckdb:after-data=2') },
  { pipeline: 'snapshot', sink: 'duckdb_replace', kill: fp('duckdb:replace-swap') },
  { pipeline: 'snapshot', sink: 'parquet_replace', kill: fp('files:after-rename=1') },
  { pipeline: 'snapshot', sink: 'parquet_replace', kill: fp('replace:before-swap') },
  { pipeline: 'snapshot', sink: 'parquet_replace', kill: fp('replace:after-swap') },
  { pipeline: 'snapshot', sink: 'jsonl_replace', kill: fp('replace:before-swap') },
  { pipeline: 'snapshot', sink: 'jsonl_replace', kill: fp('replace:after-swap') },
  // A SERP crawl: pages discovered while reading, into DuckDB.
  ...(['crawl:successor-recorded=4', 'duckdb:after-data=5', 'engine:after-commit=4'] as const).map((f) => ({
    pipeline: 'serp' as const,
    sink: 'duckdb' as const,
    kill: fp(f),
  })),
  { pipeline: 'serp', sink: 'duckdb', kill: external },
];

/** What DuckDB computes over an output: rows, distinct keys, and a hash over every row's JSON. */
export interface Digest {
  rows: number;
  keys: number;
  checksum: string;
}

export interface CellResult extends CellSpec {
  label: string;
  /** Died by SIGKILL at the failpoint (or, external, killed mid-download before it finished). */
  died: boolean;
  /** How the crash run ended when it did not die as planned. */
  endedAs?: string;
  /** External kills: ms after the emulator had counted the second download. */
  killDelayMs?: number;
  /** Right after the kill: a reader saw a partial or unreadable file, a record twice, or uncommitted rows. */
  partialVisible: boolean;
  /** Right after the kill: rows a reader saw (undefined: nothing to read yet). */
  visibleRows: number | undefined;
  visibleProblems: string[];
  /** Runs after the crash until one succeeded. */
  reruns: number;
  rerunSucceeded: boolean;
  digest: Digest | undefined;
  clean: Digest;
  equal: boolean;
  /** Paid operations started by the crashed run and its reruns together. */
  paid: Record<string, number>;
  paidOnce: boolean;
  /** Temp, staging, marker or generation files left after the successful rerun. */
  leftovers: string[];
  failures: string[];
  seconds: number;
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
  keep?: boolean;
}

export function cellLabel(c: CellSpec): string {
  return `${c.pipeline} → ${c.sink} @ ${'external' in c.kill ? 'kill -9 mid-download' : c.kill.failpoint}`;
}

export async function runCrashMatrix(opts: MatrixOptions = {}): Promise<MatrixResult> {
  const started = Date.now();
  const cells = opts.cells ?? CELLS;
  const root = mkdtempSync(path.join(tmpdir(), 'sluice-crash-matrix-'));
  try {
    // Clean outputs, in this process (what a clean `sluice run` writes); `replace` cells make their own first run.
    const kinds = [
      ...new Map(
        cells.filter((c) => !isReplace(c.sink)).map((c) => [`${c.pipeline}/${c.sink}`, c] as const),
      ).values(),
    ];
    const clean = new Map<string, Digest>();
    await inParallel(kinds, opts.parallel ?? 2, async (c) => {
      clean.set(`${c.pipeline}/${c.sink}`, await cleanDigest(root, c.pipeline, c.sink));
    });
    const results = await inParallel(cells, opts.parallel ?? 2, async (c, i) => {
      const r = await runCell(root, i, c, clean.get(`${c.pipeline}/${c.sink}`));
      opts.progress?.(
        `${r.label}: ${r.died ? 'died' : `DID NOT DIE (${r.endedAs})`}, ` +
          `${r.partialVisible ? `PARTIAL VISIBLE (${r.visibleProblems.join('; ')})` : 'nothing partial visible'}, ` +
          `${r.equal ? 'equal' : 'DIFFERENT'} after ${r.reruns} rerun(s), paid ${paidText(r.paid)}` +
          `${r.leftovers.length ? `, LEFTOVERS ${r.leftovers.join(' ')}` : ''} (${r.seconds.toFixed(1)} s)`,
      );
      return r;
    });
    return { cells: results, seconds: (Date.now() - started) / 1000 };
  } finally {
    if (!opts.keep) rmSync(root, { recursive: true, force: true });
  }
}

function isReplace(s: SinkKind): boolean {
  return s.endsWith('_replace');
}

/** The paid operations a run of the pipeline starts, each exactly once. */
const PAID: Record<PipelineKind, string[]> = { snapshot: ['filter'], serp: [] };

async function runCell(root: string, index: number, spec: CellSpec, cleanKnown: Digest | undefined): Promise<CellResult> {
  const t0 = Date.now();
  const label = cellLabel(spec);
  const dir = path.join(root, `cell-${String(index).padStart(2, '0')}`);
  mkdirSync(dir, { recursive: true });
  const emu = await startEmulator(emulatorOptions());
  const file = path.join(dir, 'pipeline.yaml');
  writeFileSync(file, pipelineYaml(spec.pipeline, spec.sink, emu.url));
  writeFileSync(path.join(dir, 'cell.txt'), `${label}\n`);
  const failures: string[] = [];
  const result: CellResult = {
    ...spec,
    label,
    died: false,
    partialVisible: false,
    visibleRows: undefined,
    visibleProblems: [],
    reruns: 0,
    rerunSucceeded: false,
    digest: undefined,
    clean: cleanKnown ?? { rows: 0, keys: 0, checksum: '' },
    equal: false,
    paid: {},
    paidOnce: false,
    leftovers: [],
    failures,
    seconds: 0,
  };
  try {
    if (isReplace(spec.sink)) {
      // The earlier, complete run whose output a reader must keep seeing until the new one is swapped in.
      const first = await sluiceRun(file, {});
      if (first.code !== 0) throw new Error(`the first (clean) run failed: ${lastLines(first.stderr)}`);
      result.clean = await outputDigest(dir, spec);
    }
    const paidBefore = { ...emu.stats.paid };

    const crash = await crashRun(file, spec.kill, emu);
    result.died = crash.died;
    if (crash.killDelayMs !== undefined) result.killDelayMs = crash.killDelayMs;
    if (!crash.died) result.endedAs = crash.endedAs;
    writeFileSync(path.join(dir, 'crash.stderr.txt'), crash.stderr);

    const visible = await visibleAfterKill(dir, spec, result.clean);
    result.visibleRows = visible.rows;
    result.visibleProblems = visible.problems;
    result.partialVisible = visible.problems.length > 0;

    for (let i = 0; i < MAX_RERUNS && !result.rerunSucceeded; i++) {
      result.reruns++;
      const r = await sluiceRun(file, {});
      writeFileSync(path.join(dir, `rerun-${result.reruns}.stderr.txt`), r.stderr);
      if (r.code === 0) result.rerunSucceeded = true;
      else failures.push(`rerun ${result.reruns}: exit ${r.code ?? r.signal}: ${lastLines(r.stderr)}`);
    }
    result.paid = diff(emu.stats.paid, paidBefore);
    result.paidOnce =
      PAID[spec.pipeline].every((k) => result.paid[k] === 1) &&
      Object.keys(result.paid).every((k) => PAID[spec.pipeline].includes(k));
    if (result.rerunSucceeded) {
      result.digest = await outputDigest(dir, spec);
      result.equal = sameDigest(result.digest, result.clean);
      result.leftovers = leftovers(dir, spec);
    }
  } catch (err) {
    failures.push(err instanceof Error ? err.message : String(err));
  } finally {
    await emu.close();
    result.seconds = (Date.now() - t0) / 1000;
  }
  return result;
}

function emulatorOptions(): Parameters<typeof startEmulator>[0] {
  // Filter jobs take a fraction of a second at the real pace, keeping the service clock the local one.
  return { apiKey: API_KEY, seed: DATA_SEED, size: 6000, timeScale: 1, jobSchedulingMs: 100 };
}

function pipelineYaml(p: PipelineKind, s: SinkKind, url: string): string {
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
          `  records_limit: ${RECORDS}`,
          '  download: { format: jsonl, compress: true, batch_size: 1000 }',
          '  concurrency: 2',
          '  poll: { interval_ms: 20, timeout_s: 60 }',
          // Merge goes through a JS transform (rows from JS); the other sinks take the native paths.
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
  const sink: Record<SinkKind, string> = {
    duckdb: 'sink: { type: duckdb, path: out/warehouse.duckdb, table: t }',
    duckdb_merge: 'sink: { type: duckdb, path: out/warehouse.duckdb, table: t, write: merge, primary_key: [id] }',
    duckdb_replace: 'sink: { type: duckdb, path: out/warehouse.duckdb, table: t, write: replace }',
    parquet: `sink: { type: parquet, path: out/parquet, file_size_bytes: ${PARQUET_FILE_BYTES} }`,
    parquet_replace: `sink: { type: parquet, path: out/parquet, write: replace, file_size_bytes: ${PARQUET_FILE_BYTES} }`,
    jsonl: 'sink: { type: jsonl, path: out/jsonl }',
    jsonl_replace: 'sink: { type: jsonl, path: out/jsonl, write: replace }',
  };
  return ['version: 1', `name: cm_${p}_${s}`, ...service, ...source, sink[s], ''].join('\n');
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * `node bin/sluice.js run <file>` in a child process, spawned asynchronously: the emulator answers its requests on
 * this process's event loop. The child never inherits failpoints, a key or an address from this environment.
 */
function spawnRun(file: string, env: Record<string, string>): { child: ReturnType<typeof spawn>; done: Promise<Exit> } {
  const {
    [FAILPOINTS_ENV]: _fp,
    SLUICE_BASE_URL: _url,
    SLUICE_API_KEY: _key,
    ...inherited
  } = process.env as Record<string, string>;
  const child = spawn(process.execPath, [BIN, 'run', file, '--no-progress'], {
    cwd: path.dirname(file),
    env: { ...inherited, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const done = new Promise<Exit>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { child, done };
}

function sluiceRun(file: string, env: Record<string, string>): Promise<Exit> {
  return spawnRun(file, env).done;
}

async function crashRun(
  file: string,
  kill: Kill,
  emu: EmulatorHandle,
): Promise<{ died: boolean; endedAs?: string; killDelayMs?: number; stderr: string }> {
  if ('failpoint' in kill) {
    const r = await sluiceRun(file, { [FAILPOINTS_ENV]: kill.failpoint });
    const name = kill.failpoint.split('=')[0]!;
    const died = r.signal === 'SIGKILL' && r.stderr.includes(`failpoint ${name} reached`);
    return { died, ...(!died && { endedAs: r.signal ?? `exit ${r.code}` }), stderr: r.stderr };
  }
  // From outside, at a random moment once the emulator has counted the second download (page, for a crawl).
  const { child, done } = spawnRun(file, {});
  const counted = (): number =>
    (emu.stats.routes['GET /datasets/snapshots/:id/download'] ?? 0) + (emu.stats.routes['POST /request'] ?? 0);
  const before = counted();
  const delay = Math.floor(Math.random() * 40);
  let killed = false;
  const timer = setInterval(() => {
    if (killed || counted() - before < 2) return;
    killed = true;
    clearInterval(timer);
    setTimeout(() => child.kill('SIGKILL'), delay);
  }, 2);
  const r = await done;
  clearInterval(timer);
  const died = killed && r.signal === 'SIGKILL';
  return { died, ...(!died && { endedAs: r.signal ?? `exit ${r.code}` }), killDelayMs: delay, stderr: r.stderr };
}

/** Keys that identify a record of each pipeline's output. */
const KEYS: Record<PipelineKind, string> = { snapshot: 'id', serp: "concat_ws('|', query, page, rank)" };
/** Columns that differ between two correct runs (fetch times, the service's per-request ids). */
const VOLATILE = ['fetched_at', 'request_id'];

function outputPath(dir: string, s: SinkKind): string {
  if (s.startsWith('duckdb')) return path.join(dir, 'out/warehouse.duckdb');
  return path.join(dir, 'out', s.startsWith('parquet') ? 'parquet' : 'jsonl');
}

/** What a reader of the sink's output sees: a DuckDB table, or every data file a glob lists. */
async function relationOf(conn: DuckDBConnection, dir: string, s: SinkKind): Promise<string | undefined> {
  const out = outputPath(dir, s);
  if (s.startsWith('duckdb')) {
    if (!existsSync(out)) return undefined;
    await conn.run(`ATTACH ${sql(out)} AS w (READ_ONLY)`);
    const t = await conn.runAndReadAll(
      `SELECT 1 FROM duckdb_tables() WHERE database_name = 'w' AND schema_name = 'main' AND table_name = 't'`,
    );
    return t.currentRowCount > 0 ? 'w.t' : undefined;
  }
  const files = await globbed(conn, dir, s);
  if (files.length === 0) return undefined;
  const list = `[${files.map(sql).join(', ')}]`;
  return s.startsWith('parquet')
    ? `read_parquet(${list}, union_by_name = true)`
    : `read_json(${list}, format = 'newline_delimited', union_by_name = true)`;
}

/** The files DuckDB's own glob lists under the output path, as a reader's `read_parquet('dir/**')` would. */
async function globbed(conn: DuckDBConnection, dir: string, s: SinkKind): Promise<string[]> {
  const out = outputPath(dir, s);
  if (!existsSync(out)) return [];
  const pattern = s.startsWith('parquet') ? `${out}/**/*.parquet` : `${out}/**/*.jsonl*`;
  const r = await conn.runAndReadAll(`SELECT file FROM glob(${sql(pattern)}) ORDER BY file`);
  return r.getRowObjectsJS().map((x) => String(x.file));
}

async function withDuckDB<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    return await fn(conn);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** Rows, distinct keys and a checksum of the sink's output as a reader sees it, computed by DuckDB. */
async function outputDigest(dir: string, spec: CellSpec): Promise<Digest> {
  return withDuckDB(async (conn) => {
    const relation = await relationOf(conn, dir, spec.sink);
    if (relation === undefined) return { rows: 0, keys: 0, checksum: 'empty' };
    return digestOf(conn, relation, spec.pipeline);
  });
}

async function digestOf(conn: DuckDBConnection, relation: string, p: PipelineKind): Promise<Digest> {
  const columns = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${relation}`))
    .getRowObjectsJS()
    .map((r) => String(r.column_name));
  const volatile = VOLATILE.filter((c) => columns.includes(c));
  const t = `(SELECT * ${volatile.length ? `EXCLUDE (${volatile.join(', ')})` : ''} FROM ${relation}) t`;
  const counts = (
    await conn.runAndReadAll(`SELECT count(*) AS n, count(DISTINCT ${KEYS[p]}) AS keys FROM ${t}`)
  ).getRowObjectsJS()[0]!;
  // Each row as DuckDB renders it in JSON, keys sorted and numbers re-read: files published at different moments
  // may type a struct's fields in another order, or a column as DOUBLE where another has BIGINT (same values).
  const lines = (await conn.runAndReadAll(`SELECT to_json(t)::VARCHAR AS j FROM ${t}`))
    .getRowObjectsJS()
    .map((r) => JSON.stringify(sortKeys(JSON.parse(String(r.j)))))
    .sort();
  const hash = createHash('sha256');
  for (const l of lines) hash.update(l).update('\n');
  return { rows: Number(counts.n), keys: Number(counts.keys), checksum: hash.digest('hex').slice(0, 16) };
}

/**
 * What a reader sees right after the kill, and what is wrong with it: files that do not read whole, records
 * visible twice, more rows than a clean run, rows no checkpoint accounts for; `replace`: anything but the live
 * (clean) generation.
 */
async function visibleAfterKill(
  dir: string,
  spec: CellSpec,
  clean: Digest,
): Promise<{ rows: number | undefined; problems: string[] }> {
  return withDuckDB(async (conn) => {
    const problems: string[] = [];
    if (!spec.sink.startsWith('duckdb')) {
      for (const f of await globbed(conn, dir, spec.sink)) {
        const problem = spec.sink.startsWith('parquet') ? await parquetProblem(conn, f) : jsonlProblem(f);
        if (problem) problems.push(`${path.basename(f)}: ${problem}`);
      }
      if (problems.length > 0) return { rows: undefined, problems };
    }
    let relation: string | undefined;
    try {
      relation = await relationOf(conn, dir, spec.sink);
    } catch (err) {
      return { rows: undefined, problems: [`the output cannot be read: ${firstLine(err)}`] };
    }
    if (relation === undefined) {
      if (isReplace(spec.sink)) problems.push('the output of the earlier run is gone');
      return { rows: undefined, problems };
    }
    const d = await digestOf(conn, relation, spec.pipeline);
    if (isReplace(spec.sink)) {
      if (!sameDigest(d, clean)) problems.push(`the live output is not a complete run's: ${JSON.stringify(d)}`);
      return { rows: d.rows, problems };
    }
    if (d.keys !== d.rows) problems.push(`${d.rows - d.keys} record(s) visible twice`);
    if (d.rows > clean.rows) problems.push(`${d.rows} rows visible, more than a clean run's ${clean.rows}`);
    if (spec.sink === 'duckdb') {
      // Every row in the table is accounted for by a committed unit's checkpoint, and nothing else.
      const r = await conn.runAndReadAll(
        `SELECT coalesce(sum(records), 0)::BIGINT AS n FROM w._sluice_state WHERE table_name = 't'`,
      );
      const checkpointed = Number(r.getRowObjectsJS()[0]!.n);
      if (checkpointed !== d.rows) problems.push(`${d.rows} rows in the table, ${checkpointed} checkpointed`);
    }
    return { rows: d.rows, problems };
  });
}

async function parquetProblem(conn: DuckDBConnection, file: string): Promise<string | undefined> {
  try {
    await conn.runAndReadAll(`SELECT count(*) FROM read_parquet(${sql(file)})`);
    return undefined;
  } catch (err) {
    return `unreadable: ${firstLine(err)}`;
  }
}

/** A JSONL file is whole when it ends with a newline and every line is a JSON object. */
function jsonlProblem(file: string): string | undefined {
  const text = readFileSync(file, 'utf8');
  if (text.length > 0 && !text.endsWith('\n')) return 'does not end with a newline (cut short)';
  const lines = text.split('\n').slice(0, -1);
  for (let i = 0; i < lines.length; i++) {
    try {
      const v: unknown = JSON.parse(lines[i]!);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return `line ${i + 1} is not a JSON object`;
    } catch {
      return `line ${i + 1} is not JSON`;
    }
  }
  return undefined;
}

/** Crash leftovers still there after the successful rerun (the rerun must clear them). */
function leftovers(dir: string, spec: CellSpec): string[] {
  const found: string[] = [];
  const rel = (p: string): string => path.relative(dir, p);
  const contents = (d: string): string[] => (existsSync(d) ? readdirSync(d).map((n) => path.join(d, n)) : []);
  const stateDir = path.join(dir, '.sluice', `cm_${spec.pipeline}_${spec.sink}`);
  for (const f of contents(stateDir))
    if (!['state.json', 'dead-letters.jsonl', 'tmp'].includes(path.basename(f))) found.push(rel(f));
  found.push(...contents(path.join(stateDir, 'tmp')).map(rel));
  const out = outputPath(dir, spec.sink);
  if (spec.sink.startsWith('duckdb')) {
    found.push(...contents(`${out}.sluice-tmp`).map(rel));
    return found;
  }
  found.push(...contents(path.join(out, '.sluice-tmp')).map(rel));
  found.push(...contents(path.join(out, '.sluice-staged')).map(rel));
  if (isReplace(spec.sink)) {
    const gens = path.join(path.dirname(out), `.${path.basename(out)}.sluice-generations`);
    const names = contents(gens);
    if (names.length !== 1) found.push(...names.map(rel));
  }
  // Every data file a reader lists is one the manifest commits.
  const manifest = JSON.parse(readFileSync(path.join(out, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { files: string[] }>;
  };
  const listed = new Set(Object.values(manifest.units).flatMap((u) => u.files));
  const ext = spec.sink.startsWith('parquet') ? '.parquet' : '.jsonl';
  for (const f of walk(out)) if (f.includes(ext) && !listed.has(path.relative(out, f))) found.push(rel(f));
  return found;
}

/** Files under `dir` (following a symlinked root), skipping the sinks' hidden directories. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/** A clean run in this process, into a directory of its own, and its digest. */
async function cleanDigest(root: string, p: PipelineKind, s: SinkKind): Promise<Digest> {
  const dir = path.join(root, `clean-${p}-${s}`);
  mkdirSync(dir, { recursive: true });
  const emu = await startEmulator(emulatorOptions());
  try {
    const file = path.join(dir, 'pipeline.yaml');
    writeFileSync(file, pipelineYaml(p, s, emu.url));
    await runPipeline(
      await loadPipeline(file, {}),
      { fresh: false, logFormat: 'text', quiet: true, progress: false },
      { log: silent },
    );
  } finally {
    await emu.close();
  }
  const d = await outputDigest(dir, { pipeline: p, sink: s, kill: external });
  if (d.rows === 0 || d.keys !== d.rows) throw new Error(`the clean run of ${p} → ${s} wrote ${JSON.stringify(d)}`);
  return d;
}

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, sortKeys(o[k])]),
  );
}

function sameDigest(a: Digest, b: Digest): boolean {
  return a.rows === b.rows && a.keys === b.keys && a.checksum === b.checksum;
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(after)) if (n - (before[k] ?? 0) > 0) out[k] = n - (before[k] ?? 0);
  return out;
}

function sql(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
}

function lastLines(stderr: string): string {
  return stderr.trimEnd().split('\n').slice(-2).join(' / ');
}

function paidText(p: Record<string, number>): string {
  const parts = Object.entries(p).map(([k, n]) => `${k} ${n}`);
  return parts.length ? parts.join(', ') : 'none';
}

async function inParallel<T, R>(items: T[], n: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, items.length)) }, worker));
  return out;
}

/** A cell passed: it died where planned, showed nothing partial, and one rerun made the clean output, paid once. */
export function cellPassed(c: CellResult): boolean {
  return (
    c.died &&
    !c.partialVisible &&
    c.rerunSucceeded &&
    c.reruns === 1 &&
    c.equal &&
    c.paidOnce &&
    c.leftovers.length === 0 &&
    c.failures.length === 0
  );
}

/** The matrix as a Markdown table, with totals. */
export function formatMatrix(r: MatrixResult): string {
  const head =
    '| pipeline | sink | killed at | died there | partial or uncommitted data visible | rows visible after kill | reruns needed | rerun equal to clean | paid calls | leftovers |\n' +
    '|---|---|---|---|---|---:|---:|---|---|---|';
  const rows = r.cells.map((c) => {
    const at =
      'external' in c.kill ? `kill -9 from outside, ${c.killDelayMs} ms after the 2nd download` : c.kill.failpoint;
    return (
      `| ${c.pipeline} | ${c.sink} | ${at} | ${c.died ? 'yes' : `NO (${c.endedAs})`} | ` +
      `${c.partialVisible ? `YES: ${c.visibleProblems.join('; ')}` : 'no'} | ` +
      `${c.visibleRows ?? 0} of ${c.clean.rows} | ${c.rerunSucceeded ? c.reruns : `${c.reruns} (all failed)`} | ` +
      `${c.equal ? 'yes' : 'NO'} | ${PAID[c.pipeline].length ? paidText(c.paid) : '—'}${c.paidOnce ? '' : ' (NOT once)'} | ` +
      `${c.leftovers.length ? c.leftovers.join(' ') : 'none'} |`
    );
  });
  const clean = [...new Map(r.cells.map((c) => [`${c.pipeline}/${c.sink}`, c])).values()]
    .map((c) => `${c.pipeline} → ${c.sink}: ${c.clean.rows} rows, ${c.clean.keys} keys, ${c.clean.checksum}`)
    .join('; ');
  const failed = r.cells.flatMap((c) => c.failures.map((f) => `- ${c.label}: ${f}`));
  return [
    `Crash matrix: ${r.cells.length} cells, each \`sluice run\` killed with SIGKILL, then run again; ${r.seconds.toFixed(0)} s.`,
    '',
    head,
    ...rows,
    '',
    `Passed: ${r.cells.filter(cellPassed).length}/${r.cells.length} (died at the failpoint, nothing partial visible, ` +
      'one rerun gave the clean output, paid calls once, no leftovers).',
    `Clean outputs: ${clean}.`,
    ...(failed.length ? ['', 'Failures:', ...failed] : []),
    '',
  ].join('\n');
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const only = arg('only');
  const out = arg('out') ?? 'out/crash-matrix.md';
  const parallel = arg('parallel');
  const result = await runCrashMatrix({
    ...(only !== undefined && { cells: CELLS.filter((c) => cellLabel(c).includes(only)) }),
    ...(parallel !== undefined && { parallel: Number(parallel) }),
    keep: process.argv.includes('--keep'),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  const table = formatMatrix(result);
  process.stdout.write(table);
  if (only === undefined) {
    mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    writeFileSync(out, table);
    process.stderr.write(`written to ${out}\n`);
  }
  if (!result.cells.every(cellPassed)) process.exitCode = 1;
}
