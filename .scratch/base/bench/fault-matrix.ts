/**
 * The fault matrix: every pipeline kind × every sink × several fault seeds, against an emulator that injects faults
 * into 10% of its responses (429 with and without Retry-After, 500/502/503, resets before, after and in the middle
 * of answers, truncated gzip, slow bodies). A cell's run may fail; it is then rerun, as cron would, until it succeeds
 * or runs out of reruns. The cell passes when its final output equals a clean run's (rows, distinct keys, and a
 * checksum over the rows DuckDB — or for Postgres, the server — reads back from the output) and every paid call was
 * made exactly once.
 *
 * The postgres sink's cells also have faults on the sink's side: the sink reaches one throwaway cluster (a database
 * per cell) through a loopback TCP proxy (test/support/tcp-proxy.ts) that resets connections drawn by the cell's
 * fault seed — mid-COPY, after the server committed but before the client heard (the unit "maybe committed"), and
 * before a query reached the server — reported as the `pg_reset_*` fault kinds.
 *
 *   npx tsx bench/fault-matrix.ts [--seeds 1,2,3,4,5] [--rate 0.1] [--out out/fault-matrix.md] [--keep]
 *
 * prints the table and writes it as Markdown. test/reliability/fault-matrix.test.ts runs the same matrix and
 * asserts it.
 *
 * Each cell has an emulator of its own (same data seed, its own fault seed), so its paid-call counters and its
 * snapshot list hold only that cell's work, and the pipeline runs in-process (`runPipeline`) against it.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../src/core/types.js';
import { COMPANY_PROFILES_ID } from '../src/emulator/data/company-profiles.js';
import { knowledgeFid } from '../src/emulator/data/serp.js';
import type { EmulatorOptions } from '../src/emulator/context.js';
import { startEmulator, type FaultConfig } from '../src/emulator/server.js';
import { runPipeline } from '../src/engine/run.js';
import { loadPipeline } from '../src/pipeline/load.js';
import { canonical } from '../test/support/compare-tables.js';
import { startPostgres, type PostgresServer } from '../test/support/postgres-server.js';
import { CUT_MOMENTS, startTcpProxy, type CutMoment, type TcpProxy } from '../test/support/tcp-proxy.js';
import {
  cliArg,
  digestOf,
  inParallel,
  paidText,
  sameDigest,
  sql,
  withDuckDB,
  type Digest,
} from './lib/matrix-common.js';

export type { Digest } from './lib/matrix-common.js';

export const PIPELINES = ['snapshot', 'serp', 'reviews', 'deep_lookup'] as const;
export const SINKS = ['duckdb', 'parquet', 'jsonl', 'postgres'] as const;
export type PipelineKind = (typeof PIPELINES)[number];
export type SinkKind = (typeof SINKS)[number];

/** Every kind the emulator can inject, equally likely (latency is not a fault: slow_body covers slowness). */
export const FAULT_WEIGHTS = {
  '429': 1,
  '429_retry_after': 1,
  '500': 1,
  '502': 1,
  '503': 1,
  reset_before: 1,
  reset: 1,
  reset_after: 1,
  truncated_gzip: 1,
  slow_body: 1,
} as const;

/**
 * The sink-side faults of the postgres cells: the share of each moment's occurrences (test/support/tcp-proxy.ts)
 * whose connection is reset. A unit sends one CopyData message per ~256 KiB and one COMMIT, and a few queries; the
 * rates keep a unit's four attempts from all failing while every kind strikes in a cell.
 */
export const PG_RESET_RATES: Record<CutMoment, number> = { copy: 0.1, commit: 0.15, query: 0.015 };
/** The fault kinds the proxy reports, as the matrix names them. */
export const PG_FAULTS = CUT_MOMENTS.map((m) => `pg_reset_${m}`);

const API_KEY = 'fault-matrix-key';
/** The data is the same in every cell; only the faults differ by seed. */
const DATA_SEED = 7;
const DEEP_LOOKUP_QUERY = 'Find all AI startups founded after 2020 with more than 50 employees';
const SERP_QUERIES = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon', 'tea shops kyoto'];

export interface MatrixOptions {
  seeds?: number[];
  pipelines?: readonly PipelineKind[];
  sinks?: readonly SinkKind[];
  /** Share of responses that get a fault. */
  rate?: number;
  /** Reruns after a failed run, at most. */
  maxReruns?: number;
  /** Cells run at once. */
  parallel?: number;
  /** Progress lines (one per cell). */
  progress?: (line: string) => void;
  /** Keep the cells' directories (pipelines, outputs, logs) for a look. */
  keep?: boolean;
  /** Which of seeds × pipelines × sinks to run (default: all); the clean runs follow the cells kept. */
  cells?: (cell: { seed: number; pipeline: PipelineKind; sink: SinkKind }) => boolean;
}

/** What DuckDB computes over an output: rows, distinct keys, and md5 over the rows' JSON in a fixed order. */
export interface CellResult extends CellRun {
  clean: Digest;
  equal: boolean;
  /** Every paid operation the pipeline needs was started exactly once. */
  paidOnce: boolean;
}

export interface MatrixResult {
  cells: CellResult[];
  seconds: number;
  rate: number;
}

/** The paid operations each pipeline needs, exactly once. */
const PAID: Record<PipelineKind, string[]> = {
  snapshot: ['filter'],
  serp: [],
  reviews: [],
  deep_lookup: ['trigger', 'enrich'],
};

/** Columns that differ between two correct runs (fetch times, the service's per-request ids). */
const VOLATILE = ['fetched_at', 'request_id', 'created_at', 'review_reply_created_at'];

const KEYS: Record<PipelineKind, string> = {
  snapshot: 'id',
  serp: "concat_ws('|', query, page, rank)",
  reviews: 'review_id',
  deep_lookup: 'company_name',
};

export async function runFaultMatrix(opts: MatrixOptions = {}): Promise<MatrixResult> {
  const started = Date.now();
  const seeds = opts.seeds ?? [1, 2, 3, 4, 5];
  const pipelines = opts.pipelines ?? PIPELINES;
  const sinks = opts.sinks ?? SINKS;
  const rate = opts.rate ?? 0.1;
  const root = mkdtempSync(path.join(tmpdir(), 'sluice-fault-matrix-'));
  const jobs = seeds
    .flatMap((seed) => pipelines.flatMap((p) => sinks.map((s) => ({ seed, p, s }))))
    .filter(({ seed, p, s }) => opts.cells?.({ seed, pipeline: p, sink: s }) ?? true);
  // One cluster for every postgres cell, each cell a database of its own.
  const pg = jobs.some((j) => j.s === 'postgres') ? await startPostgres() : undefined;
  try {
    const clean = new Map<string, Digest>();
    const cleanJobs = [...new Map(jobs.map(({ p, s }) => [`${p}/${s}`, { p, s }])).values()];
    await inParallel(cleanJobs, opts.parallel ?? 3, async ({ p, s }) => {
      const r = await runCell({ root, seed: 0, pipeline: p, sink: s, rate: 0, maxReruns: 0, pg });
      if (!r.digest || r.failures.length > 0)
        throw new Error(`the clean run of ${p} → ${s} failed: ${r.failures.join(' / ') || 'no output'}`);
      clean.set(`${p}/${s}`, r.digest);
    });

    const cells = await inParallel(jobs, opts.parallel ?? 3, async ({ seed, p, s }) => {
      const r = await runCell({ root, seed, pipeline: p, sink: s, rate, maxReruns: opts.maxReruns ?? 3, pg });
      const c = clean.get(`${p}/${s}`)!;
      const equal = r.digest !== undefined && sameDigest(r.digest, c);
      const paidOnce = PAID[p].every((k) => r.paid[k] === 1) && Object.keys(r.paid).every((k) => PAID[p].includes(k));
      const cell: CellResult = { ...r, clean: c, equal, paidOnce };
      opts.progress?.(
        `seed ${seed} ${p} → ${s}: ${r.runs} run(s), ${r.retries} retries, faults ${faultText(r.faults)}, ` +
          `${equal ? 'equal' : 'DIFFERENT'}, paid ${paidText(r.paid)} (${cell.seconds.toFixed(1)} s)`,
      );
      return cell;
    });
    return { cells, seconds: (Date.now() - started) / 1000, rate };
  } finally {
    pg?.stop();
    if (!opts.keep) rmSync(root, { recursive: true, force: true });
  }
}

interface CellRun {
  seed: number;
  pipeline: PipelineKind;
  sink: SinkKind;
  /** Runs made: 1 when the first run succeeded. */
  runs: number;
  succeeded: boolean;
  /** Client retries plus units read again, over all runs. */
  retries: number;
  faults: Record<string, number>;
  /** Requests the emulator received, over all runs. */
  requests: number;
  /** Paid operations the emulator started, by kind. */
  paid: Record<string, number>;
  /** Lost answers of paid calls recovered by reconciliation (from the logs). */
  recovered: number;
  /** First line of each failed run's error. */
  failures: string[];
  digest: Digest | undefined;
  seconds: number;
}

async function runCell(c: {
  root: string;
  seed: number;
  pipeline: PipelineKind;
  sink: SinkKind;
  rate: number;
  maxReruns: number;
  pg: PostgresServer | undefined;
}): Promise<CellRun> {
  const t0 = Date.now();
  const name = `${c.rate === 0 ? 'clean' : `seed${c.seed}`}-${c.pipeline}-${c.sink}`;
  const dir = path.join(c.root, name);
  mkdirSync(dir, { recursive: true });
  const emu = await startEmulator(emulatorOptions(c.pipeline, c.rate === 0 ? undefined : faultConfig(c)));
  const logLines: string[] = [];
  const log = memoryLogger(logLines);
  const file = path.join(dir, 'pipeline.yaml');
  let database: PgCell | undefined;
  if (c.sink === 'postgres') {
    if (!c.pg) throw new Error('a postgres cell needs the cluster');
    database = await pgCell(
      c.pg,
      name.replace(/-/g, '_'),
      c.rate === 0 ? undefined : faultSeed(c.seed, c.pipeline, c.sink),
    );
  }
  writeFileSync(file, pipelineYaml(c.pipeline, c.sink, emu.url, database?.url));
  let runs = 0;
  let retries = 0;
  let succeeded = false;
  const failures: string[] = [];
  try {
    const loaded = await loadPipeline(file, {});
    while (!succeeded && runs <= c.maxReruns) {
      runs++;
      logLines.push(`--- run ${runs}`);
      try {
        const summary = await runPipeline(
          loaded,
          { fresh: false, logFormat: 'text', quiet: true, progress: false },
          { log },
        );
        retries += summary.retries;
        succeeded = true;
      } catch (err) {
        const partial = (err as { summary?: { retries: number } }).summary;
        retries += partial?.retries ?? 0;
        failures.push(((err as Error).message ?? String(err)).split('\n')[0]!);
      }
    }
  } finally {
    await emu.close();
    await database?.proxy.close();
    writeFileSync(path.join(dir, 'log.txt'), logLines.join('\n') + '\n');
  }
  const faults: Record<string, number> = { ...emu.stats.faults };
  for (const m of CUT_MOMENTS) if (database?.proxy.cuts[m]) faults[`pg_reset_${m}`] = database.proxy.cuts[m];
  return {
    seed: c.seed,
    pipeline: c.pipeline,
    sink: c.sink,
    runs,
    succeeded,
    retries,
    faults,
    requests: Object.values(emu.stats.routes).reduce((a, b) => a + b, 0),
    paid: { ...emu.stats.paid },
    recovered: logLines.filter((l) => l.includes('recovered the lost answer')).length,
    failures,
    digest: succeeded
      ? database
        ? await postgresDigest(c.pg!, database.name, c.pipeline)
        : await digest(c.pipeline, c.sink, dir)
      : undefined,
    seconds: (Date.now() - t0) / 1000,
  };
}

function emulatorOptions(pipeline: PipelineKind, faults: FaultConfig | undefined): Partial<EmulatorOptions> {
  return {
    apiKey: API_KEY,
    seed: DATA_SEED,
    size: 5000,
    // Deep lookup's lifecycle is minutes of emulated time; filter jobs take a fraction of a second at the real
    // pace, which keeps the service clock (Date header, `created`) the local one, as it is for the real service.
    timeScale: pipeline === 'deep_lookup' ? 20_000 : 1,
    jobSchedulingMs: 100,
    ...(faults && { faults }),
  };
}

/**
 * Each cell draws its faults from a seed of its own (the matrix seed, the pipeline and the sink), so the three sinks
 * of a pipeline do not all see the same faults in the same places.
 */
export function faultSeed(seed: number, pipeline: PipelineKind, sink: SinkKind): number {
  return seed * 100 + PIPELINES.indexOf(pipeline) * 10 + SINKS.indexOf(sink);
}

/** Paid calls are one or two requests per cell: at the common rate hardly any cell would lose one's answer. */
export const PAID_FAULT_RATE = 0.3;

function faultConfig(c: { seed: number; pipeline: PipelineKind; sink: SinkKind; rate: number }): FaultConfig {
  const common = { faults: FAULT_WEIGHTS, retry_after_s: 1, slow_total_ms: 300 };
  const rules = [
    // A lost trigger answer cannot be reconciled (the service lists no lookup requests): the run stops and asks a
    // person (test/sources/deep-lookup-lost-answers.test.ts). The matrix gives the trigger refusals only.
    {
      route: 'POST /datasets/deep_lookup/v1/trigger',
      rate: PAID_FAULT_RATE,
      faults: { '429': 1, '429_retry_after': 1 },
      retry_after_s: 1,
    },
    { route: 'POST /datasets/filter', rate: PAID_FAULT_RATE, ...common },
    { route: 'POST /datasets/deep_lookup/v1/request/:id/enrich', rate: PAID_FAULT_RATE, ...common },
    // Snapshot parts are where bodies are long and gzipped: cut bodies are weighted up there (same rate).
    {
      route: 'GET /datasets/snapshots/:id/download',
      rate: c.rate,
      ...common,
      faults: { ...FAULT_WEIGHTS, reset: 3, truncated_gzip: 3, slow_body: 2 },
    },
    { route: '**', rate: c.rate, ...common },
  ];
  return { seed: faultSeed(c.seed, c.pipeline, c.sink), rules } as FaultConfig;
}

interface PgCell {
  /** The cell's database. */
  name: string;
  /** The sink's URL: through the proxy. */
  url: string;
  proxy: TcpProxy;
}

/**
 * The cell's database and the proxy its sink goes through: to the cluster's unix socket (trusted: a reconnect costs
 * no password exchange), resetting connections drawn from `faultSeed` (none for a clean run).
 */
async function pgCell(server: PostgresServer, name: string, faultSeed: number | undefined): Promise<PgCell> {
  await server.createDatabase(name);
  const proxy = await startTcpProxy({
    target: { path: path.join(server.socketDir, `.s.PGSQL.${server.port}`) },
    ...(faultSeed !== undefined && { random: { seed: faultSeed, rates: PG_RESET_RATES } }),
  });
  return { name, url: `postgres://sluice@127.0.0.1:${proxy.port}/${name}`, proxy };
}

function pipelineYaml(p: PipelineKind, s: SinkKind, url: string, postgresUrl?: string): string {
  const service = [
    'service:',
    `  base_url: ${url}`,
    `  api_key: ${API_KEY}`,
    // Fast retries keep the matrix quick; Retry-After (1 s) is honoured up to max_delay_ms.
    '  retry: { retries: 4, base_delay_ms: 20, max_delay_ms: 1000 }',
  ];
  const source: Record<PipelineKind, string[]> = {
    snapshot: [
      'source:',
      '  type: snapshot',
      `  dataset_id: ${COMPANY_PROFILES_ID}`,
      "  filter: { name: followers, operator: '>', value: 0 }",
      '  records_limit: 4000',
      '  download: { format: jsonl, compress: true, batch_size: 1000 }',
      '  concurrency: 3',
      '  poll: { interval_ms: 20, timeout_s: 60 }',
    ],
    serp: [
      'source:',
      '  type: serp',
      '  zone: serp_zone',
      '  engine: https://www.google.com',
      `  queries: ${JSON.stringify(SERP_QUERIES)}`,
      '  max_pages: 4',
      '  concurrency: 4',
      'transforms:',
      '  - { type: normalize, preset: serp_organic }',
    ],
    reviews: [
      'source:',
      '  type: reviews',
      '  zone: serp_zone',
      '  engine: https://www.google.com',
      `  from_serp: { queries: ${JSON.stringify(placeQueries())} }`,
      '  max_pages: 4',
      '  concurrency: 4',
      'transforms:',
      '  - { type: normalize, preset: reviews }',
    ],
    deep_lookup: [
      'source:',
      '  type: deep_lookup',
      `  query: ${JSON.stringify(DEEP_LOOKUP_QUERY)}`,
      '  result_limit: 20',
      '  enrich: [{ column_name: cto_name, query: CTO or head of engineering }]',
      '  poll: { interval_ms: 10, timeout_s: 60 }',
    ],
  };
  const sink: Record<SinkKind, string> = {
    duckdb: 'sink: { type: duckdb, path: out/warehouse.duckdb, table: t }',
    parquet: 'sink: { type: parquet, path: out/parquet }',
    jsonl: 'sink: { type: jsonl, path: out/jsonl }',
    postgres: `sink: { type: postgres, url: '${postgresUrl ?? ''}', table: t }`,
  };
  // `append` everywhere: a record written twice must show up, not be merged away.
  return ['version: 1', `name: fm_${p}`, ...service, ...source[p], sink[s], ''].join('\n');
}

/** Queries whose first SERP page has a knowledge panel (a place with reviews) in the emulator's data. */
function placeQueries(): string[] {
  const candidates = ['empire state building', 'louvre museum', 'golden gate bridge', 'sagrada familia', 'big ben'];
  const found = candidates.filter((q) => knowledgeFid(DATA_SEED, 'www.google.com', q) !== undefined).slice(0, 2);
  if (found.length === 0) throw new Error(`none of ${candidates.join(', ')} has a place in the emulator's data`);
  return found;
}

/** Rows, distinct keys and a checksum of one cell's committed output, computed by DuckDB. */
async function digest(p: PipelineKind, s: SinkKind, dir: string): Promise<Digest> {
  return withDuckDB(async (conn) => {
    let relation: string;
    if (s === 'duckdb') {
      await conn.run(`ATTACH ${sql(path.join(dir, 'out/warehouse.duckdb'))} AS w (READ_ONLY)`);
      relation = 'w.t';
    } else {
      const out = path.join(dir, 'out', s);
      const files = committedFiles(out).map((f) => sql(path.join(out, f)));
      relation =
        s === 'parquet'
          ? `read_parquet([${files.join(', ')}], union_by_name = true)`
          : `read_json([${files.join(', ')}], format = 'newline_delimited', union_by_name = true)`;
    }
    return digestOf(conn, relation, { key: KEYS[p], volatile: VOLATILE });
  });
}

/**
 * The same digest as `digest`, computed over the Postgres table: each row as the server renders it in JSON, less the
 * volatile columns, in a canonical form (keys sorted, instants as ISO text), hashed in a fixed order.
 */
async function postgresDigest(server: PostgresServer, database: string, p: PipelineKind): Promise<Digest> {
  const rows = await server.query<{ k: string | null; j: Record<string, unknown> }>(
    database,
    `SELECT (${KEYS[p]})::text AS k, to_jsonb(t) - $1::text[] AS j FROM public.t t`,
    [VOLATILE],
  );
  const lines = rows.map((r) => JSON.stringify(canonical(r.j))).sort();
  const hash = createHash('sha256');
  for (const l of lines) hash.update(l).update('\n');
  return {
    rows: rows.length,
    keys: new Set(rows.filter((r) => r.k !== null).map((r) => r.k)).size,
    checksum: hash.digest('hex').slice(0, 16),
  };
}

/** The data files a file sink's manifest lists: exactly the committed data. */
function committedFiles(dir: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(dir, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { files: string[]; staged?: unknown }>;
  };
  const files = new Set<string>();
  for (const u of Object.values(manifest.units)) {
    if (u.staged) throw new Error(`${dir}: a unit is still staged after a finished run`);
    for (const f of u.files) files.add(f);
  }
  return [...files].sort();
}

function memoryLogger(lines: string[]): Logger {
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${msg}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const FAULT_ORDER = [...Object.keys(FAULT_WEIGHTS), ...PG_FAULTS];

function faultText(f: Record<string, number>): string {
  const parts = FAULT_ORDER.filter((k) => f[k]).map((k) => `${k}×${f[k]}`);
  return parts.length ? parts.join(' ') : 'none';
}

/** The matrix as a Markdown table, with totals. */
export function formatMatrix(r: MatrixResult): string {
  const head =
    '| seed | pipeline | sink | fault seed | requests | reruns | retries | faults injected | recovered lost answers | equal to clean | paid calls |\n' +
    '|---:|---|---|---:|---:|---:|---:|---|---:|---|---|';
  const rows = r.cells.map(
    (c) =>
      `| ${c.seed} | ${c.pipeline} | ${c.sink} | ${faultSeed(c.seed, c.pipeline, c.sink)} | ${c.requests} | ` +
      `${c.runs - 1}${c.succeeded ? '' : ' (gave up)'} | ${c.retries} | ` +
      `${faultText(c.faults)} | ${c.recovered} | ${c.equal ? 'yes' : 'NO'} | ${PAID[c.pipeline].length ? paidText(c.paid) : '—'}${c.paidOnce ? '' : ' (NOT once)'} |`,
  );
  const totals: Record<string, number> = {};
  for (const c of r.cells) for (const [k, n] of Object.entries(c.faults)) totals[k] = (totals[k] ?? 0) + n;
  const cleanRows = [...new Map(r.cells.map((c) => [`${c.pipeline}/${c.sink}`, c])).values()]
    .map((c) => `${c.pipeline} → ${c.sink}: ${c.clean.rows} rows, ${c.clean.keys} keys`)
    .join('; ');
  const failed = r.cells.flatMap((c) => c.failures.map((f) => `- seed ${c.seed} ${c.pipeline} → ${c.sink}: ${f}`));
  return [
    `Fault matrix: ${r.cells.length} cells, faults on ${Math.round(r.rate * 100)}% of responses ` +
      `(${Math.round(PAID_FAULT_RATE * 100)}% of paid calls; a deep lookup trigger gets 429s only)` +
      (r.cells.some((c) => c.sink === 'postgres')
        ? `; postgres connections reset on ${CUT_MOMENTS.map((m) => `${Math.round(PG_RESET_RATES[m] * 1000) / 10}% of ${m === 'copy' ? 'COPYs' : m === 'commit' ? 'COMMITs' : 'other queries'}`).join(', ')}`
        : '') +
      `, ${r.seconds.toFixed(0)} s.`,
    '',
    head,
    ...rows,
    '',
    `Faults injected in total: ${faultText(totals)}.`,
    `Equal to clean: ${r.cells.filter((c) => c.equal).length}/${r.cells.length}; paid calls exactly once: ` +
      `${r.cells.filter((c) => c.paidOnce).length}/${r.cells.length}; reruns: ${r.cells.reduce((s, c) => s + c.runs - 1, 0)}.`,
    `Clean outputs: ${cleanRows}.`,
    ...(failed.length ? ['', 'Runs that failed (then rerun):', ...failed] : []),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const seeds = cliArg('seeds')
    ?.split(',')
    .map((s) => Number(s));
  const out = cliArg('out') ?? 'out/fault-matrix.md';
  const rate = cliArg('rate');
  const result = await runFaultMatrix({
    ...(seeds && { seeds }),
    ...(rate !== undefined && { rate: Number(rate) }),
    keep: process.argv.includes('--keep'),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  const table = formatMatrix(result);
  process.stdout.write(table);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(out, table);
  process.stderr.write(`written to ${out}\n`);
  if (!result.cells.every((c) => c.equal && c.paidOnce)) process.exitCode = 1;
}
