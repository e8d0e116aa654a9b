/**
 * `npm run bench`: the one entry point of sluice's benchmarks.
 *
 *   npm run bench [-- --records N] [--only a,b] [--repeat N] [--growth 100000,1000000,10000000] [--concurrency N]
 *                    [--duckdb-options '{"memory_limit":"192MB"}'] [--skip-crawl] [--skip-postgres] [--skip-s3]
 *                    [--skip-clickhouse] [--skip-shards]
 *
 * 1. The workload (bench/lib/workload.ts): N company profiles (default 200,000, 582 MB of JSONL) from the
 *    emulator's generator as .jsonl.gz, as 10k-record parts, as .json.gz and .csv.gz; cached under bench/.work/.
 * 2. The table: every case (bench/lib/cases.ts) in a child process of its own, `--repeat` rounds (default 2) — wall
 *    and CPU seconds, records/s, MB/s of uncompressed JSONL, peak RSS, the spread between rounds — and each sluice
 *    path beside its floor (its target) and beside DuckDB's own full-sample load of the same part files, same run.
 * 3. The crawl benchmark (bench/crawl.ts), unless `--skip-crawl`; the Postgres one (bench/cases/postgres.ts), unless
 *    `--skip-postgres`; Parquet on S3 beside local disk (bench/cases/s3.ts), unless `--skip-s3`; the ClickHouse one
 *    (bench/cases/clickhouse.ts), unless `--skip-clickhouse`; four shard processes beside one
 *    (bench/cases/shards.ts), unless `--skip-shards`.
 * 4. `--growth a,b,c`: sluice → duckdb and → parquet at each record count (bench/lib/growth.ts): time per 100k
 *    records and peak RSS of the largest within 10% of the 1,000,000 run's.
 *
 * The machine's other work shows in wall time (identical runs here differ by up to 1.4×); CPU seconds are
 * steadier, and the fastest round counts. Compare ratios from one run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { runClickHouseBench } from './cases/clickhouse.js';
import { runPostgresBench } from './cases/postgres.js';
import { runShardsBench } from './cases/shards.js';
import { runS3Bench } from './cases/s3.js';
import { runCrawlBench } from './crawl.js';
import type { CaseArgs } from './lib/cases.js';
import { runCase, type CaseResult } from './lib/child.js';
import { growthSeries } from './lib/growth.js';
import { formatTable } from './lib/table.js';
import { WORK_DIR, prepareWorkload, sizeOf, type Artifact, type Workload } from './lib/workload.js';

const CASES_MODULE = new URL('./lib/cases.ts', import.meta.url).href;

interface Row {
  name: string;
  label: string;
  /** The case this one is compared with. */
  floor?: string;
  /** Ratio to the floor's wall time that meets the target. */
  maxRatio?: number;
  /** Peak RSS at most this share of DuckDB's own load's (`duckdb-own-table`), measured in the same run. */
  maxRssOfOwn?: number;
  /** Shown for comparison only: the libraries sluice's own decoders replaced, DuckDB's sampled loads. */
  reference?: boolean;
  /** A sluice path: shown beside DuckDB's own load too. */
  sluice?: boolean;
  needs: Artifact[];
}

/** DuckDB's own load of the part files sluice reads, beside which every sluice path is shown. */
const OWN = 'duckdb-own-table';

const ROWS: Row[] = [
  { name: 'js-split', label: 'floor: JS gunzip+split', needs: ['jsonl'] },
  { name: 'js-floor', label: 'floor: JS gunzip+split+JSON.parse', needs: ['jsonl'] },
  { name: OWN, label: 'floor: DuckDB read_json → table, full sample', needs: ['parts'] },
  { name: 'duckdb-own-parquet', label: 'floor: DuckDB read_json → Parquet, full sample', needs: ['parts'] },
  {
    name: 'duckdb-own-table-sampled',
    label: 'ref: DuckDB read_json → table, sampled',
    reference: true,
    needs: ['parts'],
  },
  {
    name: 'duckdb-own-parquet-sampled',
    label: 'ref: DuckDB read_json → Parquet, sampled',
    reference: true,
    needs: ['parts'],
  },
  {
    name: 'duckdb-own-table-one-file',
    label: 'ref: DuckDB read_json of one .jsonl.gz → table, full sample',
    reference: true,
    needs: ['jsonl'],
  },
  {
    name: 'sluice-duckdb',
    label: 'sluice .jsonl.gz → duckdb',
    floor: OWN,
    maxRatio: 1.0,
    maxRssOfOwn: 0.5,
    sluice: true,
    needs: ['parts'],
  },
  {
    name: 'sluice-parquet',
    label: 'sluice .jsonl.gz → parquet',
    floor: 'duckdb-own-parquet',
    maxRatio: 1.2,
    sluice: true,
    needs: ['parts'],
  },
  // The jsonl sink judges every record (the store gate): its floor parses every line.
  {
    name: 'sluice-jsonl',
    label: 'sluice .jsonl.gz → jsonl',
    floor: 'js-floor',
    maxRatio: 1.2,
    sluice: true,
    needs: ['parts'],
  },
  { name: 'decode-jsonl', label: 'sluice decode JSONL', floor: 'js-floor', needs: ['jsonl'] },
  { name: 'decode-json', label: 'sluice decode JSON array', floor: 'js-floor', maxRatio: 1.3, needs: ['json'] },
  { name: 'decode-csv', label: 'sluice decode CSV', floor: 'js-floor', maxRatio: 2, needs: ['csv'] },
  { name: 'stream-json', label: 'ref: stream-json StreamArray', floor: 'js-floor', reference: true, needs: ['json'] },
  { name: 'csv-parse', label: 'ref: csv-parse', floor: 'js-floor', reference: true, needs: ['csv'] },
];

interface Options {
  records: number;
  only?: string[];
  repeat: number;
  skipCrawl: boolean;
  skipPostgres: boolean;
  skipS3: boolean;
  skipClickHouse: boolean;
  skipShards: boolean;
  shardRecords: number;
  growth?: number[];
  concurrency: number;
  duckdbOptions?: Record<string, unknown>;
  nodeFlags: string[];
}

function parseOptions(): Options {
  const argv = yargs(hideBin(process.argv))
    .scriptName('npm run bench --')
    .option('records', { type: 'number', default: 200_000, describe: 'Records in the workload' })
    .option('only', {
      type: 'string',
      describe: `Cases to run, comma separated: ${ROWS.map((r) => r.name).join(', ')}`,
    })
    .option('repeat', {
      type: 'number',
      default: 2,
      describe: 'Rounds of every case; the fastest counts, and the spread between rounds is printed',
    })
    .option('skip-crawl', { type: 'boolean', default: false, describe: 'Leave out the crawl benchmark' })
    .option('skip-postgres', { type: 'boolean', default: false, describe: 'Leave out the Postgres benchmark' })
    .option('skip-s3', { type: 'boolean', default: false, describe: 'Leave out the Parquet-on-S3 benchmark' })
    .option('skip-clickhouse', { type: 'boolean', default: false, describe: 'Leave out the ClickHouse benchmark' })
    .option('skip-shards', { type: 'boolean', default: false, describe: 'Leave out the four-shards benchmark' })
    .option('shard-records', { type: 'number', default: 100_000, describe: 'Records of the four-shards benchmark' })
    .option('growth', {
      type: 'string',
      describe:
        'Record counts of the growth series, comma separated (e.g. 100000,1000000,10000000): sluice → duckdb and ' +
        '→ parquet at each, time per 100k records and peak RSS against the 1,000,000 run',
    })
    .option('concurrency', { type: 'number', default: 2, describe: 'Units at once in the sluice pipelines' })
    .option('duckdb-options', { type: 'string', describe: 'JSON merged into the sluice-duckdb sink config' })
    .option('node-flags', {
      type: 'string',
      describe: 'Flags for the node process of each case, e.g. "--max-old-space-size=160"',
    })
    .strict()
    .help()
    .parseSync();
  const only = argv.only?.split(',').filter(Boolean);
  const unknown = only?.filter((n) => !ROWS.some((r) => r.name === n)) ?? [];
  if (unknown.length > 0)
    throw new Error(`unknown case(s) ${unknown.join(', ')}; cases: ${ROWS.map((r) => r.name).join(', ')}`);
  const growth = argv.growth?.split(',').map((x) => Number(x.replace(/_/g, '')));
  if (growth?.some((n) => !Number.isInteger(n) || n <= 0))
    throw new Error(`--growth takes whole numbers of records, comma separated (got ${argv.growth})`);
  return {
    records: argv.records,
    only,
    repeat: Math.max(1, argv.repeat),
    skipCrawl: argv['skip-crawl'],
    skipPostgres: argv['skip-postgres'],
    skipS3: argv['skip-s3'],
    skipClickHouse: argv['skip-clickhouse'],
    skipShards: argv['skip-shards'],
    shardRecords: argv['shard-records'],
    ...(growth && { growth }),
    concurrency: argv.concurrency,
    duckdbOptions: argv['duckdb-options'] ? (JSON.parse(argv['duckdb-options']) as Record<string, unknown>) : undefined,
    nodeFlags: argv['node-flags']?.split(/\s+/).filter(Boolean) ?? [],
  };
}

/** The rows to run: `--only`, plus the floors their ratios need and DuckDB's own load the sluice rows are shown by. */
function selectRows(only: string[] | undefined): Row[] {
  if (!only) return ROWS;
  const names = new Set(only);
  for (const r of ROWS) {
    if (names.has(r.name) && r.floor) names.add(r.floor);
    if (names.has(r.name) && r.sluice) names.add(OWN);
  }
  return ROWS.filter((r) => names.has(r.name));
}

export async function measure(
  w: Workload,
  name: string,
  o: Pick<Options, 'concurrency' | 'duckdbOptions' | 'nodeFlags'>,
): Promise<CaseResult> {
  const outDir = await mkdtemp(path.join(WORK_DIR, `out-${name}-`));
  try {
    const args: CaseArgs = {
      jsonlGz: w.jsonlGz,
      partsDir: w.partsDir,
      jsonGz: w.jsonGz,
      csvGz: w.csvGz,
      outDir,
      concurrency: o.concurrency,
      ...(name === 'sluice-duckdb' && o.duckdbOptions && { sinkOptions: o.duckdbOptions }),
    };
    const r = await runCase(CASES_MODULE, name, args, o.nodeFlags);
    if (r.records !== w.records) throw new Error(`case ${name} counted ${r.records} records, not ${w.records}`);
    return r;
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

async function mainTable(o: Options): Promise<boolean> {
  const rows = selectRows(o.only);
  const w = await prepareWorkload(o.records, [...new Set(rows.flatMap((r) => r.needs))], console.log);
  const sizes: string[] = [];
  for (const [label, p] of [
    ['.jsonl.gz', w.jsonlGz],
    ['parts', w.partsDir],
    ['.json.gz', w.jsonGz],
    ['.csv.gz', w.csvGz],
  ] as const) {
    const bytes = await sizeOf(p).catch(() => undefined);
    if (bytes !== undefined) sizes.push(`${label} ${(bytes / 1e6).toFixed(0)} MB`);
  }
  console.log(
    `${w.records.toLocaleString('en')} company profiles, ${(w.jsonlBytes / 1e6).toFixed(0)} MB as JSONL ` +
      `(gzip level 6: ${sizes.join(', ')}); ${os.cpus().length} cores, node ${process.version}, ` +
      `load average ${loadAverage()}; sluice pipelines: ${o.concurrency} units at once; ${o.repeat} round(s)`,
  );

  const runs = new Map<string, CaseResult[]>();
  let failed = false;
  // Rounds rather than repeats back to back: a burst of other work on the machine then spreads over the cases.
  for (let round = 0; round < o.repeat; round++)
    for (const row of rows) {
      try {
        const r = await measure(w, row.name, o);
        runs.set(row.name, [...(runs.get(row.name) ?? []), r]);
      } catch (err) {
        failed = true;
        console.log(`${row.name}: ${(err as Error).message}`);
      }
    }
  const best = new Map([...runs].map(([name, rs]) => [name, rs.reduce((a, b) => (b.seconds < a.seconds ? b : a))]));

  const header = ['case', 's', 'CPU s', 'rec/s', 'MB/s', 'peak RSS', 'spread', 'vs', '× wall', '× CPU'];
  const lines: string[][] = [[...header, '× own', 'RSS × own', 'target', '']];
  const own = best.get(OWN);
  for (const row of rows) {
    const r = best.get(row.name);
    if (!r) continue;
    const f = row.floor ? best.get(row.floor) : undefined;
    const ratio = f ? r.seconds / f.seconds : undefined;
    const verdict = targetVerdict(row, r, ratio, own);
    lines.push([
      row.label,
      r.seconds.toFixed(2),
      r.cpuSeconds.toFixed(2),
      Math.round(r.records / r.seconds).toLocaleString('en'),
      (w.jsonlBytes / 1e6 / r.seconds).toFixed(0),
      `${r.peakRssMb.toFixed(0)} MB`,
      spread(runs.get(row.name)!),
      row.floor ?? '',
      ratio !== undefined ? `${ratio.toFixed(2)}×` : '',
      f ? `${(r.cpuSeconds / f.cpuSeconds).toFixed(2)}×` : '',
      row.sluice && own ? `${(r.seconds / own.seconds).toFixed(2)}×` : '',
      row.sluice && own ? `${(r.peakRssMb / own.peakRssMb).toFixed(2)}×` : '',
      verdict.target,
      verdict.result,
    ]);
  }
  console.log('');
  console.log(formatTable(lines));
  console.log(
    `MB/s: uncompressed JSONL-equivalent bytes (${(w.jsonlBytes / 1e6).toFixed(0)} MB) per wall second, whatever ` +
      `the case read; s, CPU s, peak RSS: the fastest of the rounds; spread: the slowest round's wall time over the ` +
      `fastest's, the machine's variation in this run; × wall / × CPU: the case's seconds over its floor's (vs); ` +
      `× own / RSS × own: a sluice path's wall time and peak RSS over DuckDB's own full-sample load of the same ` +
      `part files into a table (every file sampled, DuckDB's threads reading several at once), in the same run; peak RSS: getrusage maxRSS of the case's process, Node's baseline ` +
      `included (plain node ≈ 40 MB; with DuckDB loaded ≈ 100 MB). Load average now ${loadAverage()}.`,
  );
  await writeFile(path.join(WORK_DIR, 'last-run.json'), JSON.stringify([...runs.values()].flat(), null, 2));
  return !failed;
}

/** The slowest run's wall time over the fastest's, as `+12%`; empty for one run. */
function spread(rs: readonly CaseResult[]): string {
  if (rs.length < 2) return '';
  const s = rs.map((r) => r.seconds);
  return `+${((Math.max(...s) / Math.min(...s) - 1) * 100).toFixed(0)}%`;
}

function targetVerdict(
  row: Row,
  r: CaseResult,
  ratio: number | undefined,
  own: CaseResult | undefined,
): { target: string; result: string } {
  if (row.reference) return { target: 'reference', result: '' };
  const parts: string[] = [];
  let ok = true;
  if (row.maxRatio !== undefined) {
    parts.push(`≤ ${row.maxRatio.toFixed(1)}×`);
    if (ratio === undefined || ratio > row.maxRatio) ok = false;
  }
  if (row.maxRssOfOwn !== undefined) {
    parts.push(`RSS ≤ ${row.maxRssOfOwn}× own`);
    if (own === undefined || r.peakRssMb > row.maxRssOfOwn * own.peakRssMb) ok = false;
  }
  if (parts.length === 0) return { target: '', result: '' };
  return { target: parts.join(', '), result: ok ? 'ok' : 'MISSED' };
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
}

async function main(): Promise<void> {
  const o = parseOptions();
  const ok = await mainTable(o);
  if (!o.skipCrawl) {
    console.log('');
    await runCrawlBench();
  }
  if (!o.skipPostgres) {
    console.log('\nsluice → postgres beside the server’s own COPY (bench/cases/postgres.ts)');
    if (!(await runPostgresBench(o))) process.exitCode = 1;
  }
  if (!o.skipS3) {
    console.log('\nsluice → parquet on a loopback S3 server beside local disk (bench/cases/s3.ts)');
    if (!(await runS3Bench(o))) process.exitCode = 1;
  }
  if (!o.skipClickHouse) {
    console.log(
      '\nsluice → clickhouse beside the server’s own client inserting JSONEachRow (bench/cases/clickhouse.ts)',
    );
    if (!(await runClickHouseBench(o))) process.exitCode = 1;
  }
  if (!o.skipShards) {
    console.log('\nfour shards behind one address beside one process (bench/cases/shards.ts)');
    if (!(await runShardsBench({ shardRecords: o.shardRecords }))) process.exitCode = 1;
  }
  if (o.growth) await growthSeries(o.growth, (w, name) => measure(w, name, o));
  // A missed target is a finding, printed above; only a case that failed to run fails the command.
  if (!ok) process.exitCode = 1;
}

if (process.argv[1] === new URL(import.meta.url).pathname) await main();
