/**
 * Sink throughput and peak memory, each route in a child process of its own (so peak RSS is the route's):
 *
 *   npx tsx bench/sinks.ts --records 200000 [--routes floor,duckdb-file,…] [--concurrency 4] [--memory-limit 256MB]
 *
 * Input: the workload's parts (bench/lib/workload.ts: the emulator's company profiles, one .jsonl.gz of 10,000
 * records per unit, as a snapshot download delivers them). Routes run units `--concurrency` at a time, like the
 * engine. Each route runs in a child process of its own (bench/lib/child.ts). `npm run bench` is the summary; this
 * tool compares the alternative routes the sinks' design choices were measured on.
 *
 *   floor            gunzip + split + JSON.parse in JS: the JS floor
 *   duckdb-own       DuckDB's own load: CREATE TABLE AS SELECT * FROM read_json('units/*.jsonl.gz')
 *   duckdb-own-units DuckDB's own load per unit: one INSERT … read_json(file) transaction per unit file
 *   duckdb-file      duckdb sink, writeUnitFile (read_json of each unit's file in the unit's transaction)
 *   duckdb-rows      decode in JS (+ timestamps → Date, as the normalizer does), duckdb sink writeUnit
 *                    (staging NDJSON + read_json)
 *   duckdb-chunk     decode in JS, DuckDB appender fed columnar DataChunks (alternative route, measured)
 *   duckdb-appender  decode in JS, DuckDB appender row by row (the naive route; skipped above 50k records)
 *   jsonl-rows       decode in JS, jsonl sink writeUnit, plain text
 *   jsonl-rows-gz1/6 the same, gzip level 1 / 6
 *   jsonl-file       jsonl sink writeUnitFile (lines checked, gzip bytes copied as they are)
 *   parquet-rows     decode in JS (+ timestamps), parquet sink (staged, published at the target size), zstd
 *   parquet-rg-default  the same with DuckDB's default row group size (122,880), for the memory comparison
 *
 * Wall time suffers when other work shares the 2 cores; CPU seconds (user + system of the route's process, all
 * threads) are steadier. Compare ratios from one run.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBDataChunk, DuckDBInstance, JSToDuckDBValueConverter, type JS } from '@duckdb/node-api';
import pLimit from 'p-limit';
import { NO_CHECKPOINT } from '../src/core/checkpoint.js';
import type { Batch, Logger, Sink, SinkContext, WorkUnit } from '../src/core/types.js';
import { duckdbType } from '../src/schema/duckdb-types.js';
import { quoteIdent } from '../src/core/sql.js';
import { InferredSchema } from '../src/schema/infer.js';
import { VARCHAR, listOf, structOf, type LogicalType } from '../src/core/logical-type.js';
import { duckdbSinkSchema } from '../sinks/duckdb/config.js';
import { DuckDBSink } from '../sinks/duckdb/sink.js';
import { JsonlSink } from '../sinks/jsonl/sink.js';
import { ParquetSink } from '../sinks/parquet/sink.js';
import { caseMain, isCaseChild, runCase, type CaseFn, type CaseOutcome, type CaseResult } from './lib/child.js';
import { parseJsonlFile, withTimestamps } from './lib/jsonl-floor.js';
import { formatTable } from './lib/table.js';
import { WORK_DIR, partFiles, prepareWorkload } from './lib/workload.js';

interface Args {
  records: number;
  concurrency: number;
  routes: string[];
  memoryLimit?: string;
}

interface Env {
  /** The route's own output directory (removed afterwards). */
  dir: string;
  units: string[];
  concurrency: number;
  records: number;
  /** `--memory-limit` for every DuckDB route; otherwise DuckDB's default (80% of RAM), or the sink's (256MB). */
  memoryLimit?: string;
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error: (m) => process.stderr.write(`${m}\n`) };

function sinkContext(dir: string): SinkContext {
  return { log: quiet, deadLetter: () => undefined, baseDir: dir, pipeline: 'bench', fresh: true };
}

function unitOf(file: string): WorkUnit {
  return { id: `bench/${path.basename(file)}`, params: {} };
}

async function eachUnit(env: Env, fn: (file: string) => Promise<number>): Promise<number> {
  const limit = pLimit(env.concurrency);
  const counts = await Promise.all(env.units.map((f) => limit(() => fn(f))));
  return counts.reduce((a, b) => a + b, 0);
}

async function throughSink(env: Env, sink: Sink, rows: (file: string) => AsyncIterable<Batch>): Promise<number> {
  await sink.open(sinkContext(env.dir));
  const n = await eachUnit(env, async (f) => (await sink.writeUnit(unitOf(f), rows(f), NO_CHECKPOINT)).records);
  await sink.finish();
  await sink.close();
  return n;
}

/** The duckdb sink on `file` with `--memory-limit`, if given. */
function duckdbSink(env: Env, file: string): DuckDBSink {
  const memory = env.memoryLimit ? { memory_limit: env.memoryLimit } : {};
  return new DuckDBSink(duckdbSinkSchema.parse({ type: 'duckdb', path: file, table: 't', ...memory }));
}

/** Each unit's file handed to the sink's native path (`writeUnitFile`). */
async function throughFiles(env: Env, sink: Sink): Promise<number> {
  await sink.open(sinkContext(env.dir));
  const n = await eachUnit(
    env,
    async (f) =>
      (
        await sink.capabilities.native!.load(
          unitOf(f),
          { path: f, decode: { format: 'jsonl' }, temporary: false },
          NO_CHECKPOINT,
        )
      ).records,
  );
  await sink.finish();
  await sink.close();
  return n;
}

const ROUTES: Record<string, (env: Env) => Promise<CaseOutcome>> = {
  async floor(env) {
    const records = await eachUnit(env, async (f) => {
      let n = 0;
      for await (const b of parseJsonlFile(f)) n += b.length;
      return n;
    });
    return { records };
  },

  async 'duckdb-own'(env) {
    const db = await DuckDBInstance.create(path.join(env.dir, 'own.duckdb'));
    const conn = await db.connect();
    if (env.memoryLimit) await conn.run(`SET memory_limit = '${env.memoryLimit}'`);
    const glob = path.join(path.dirname(env.units[0]!), '*.jsonl.gz');
    await conn.run(`CREATE TABLE t AS SELECT * FROM read_json('${glob}', format = 'newline_delimited')`);
    const r = await conn.runAndReadAll('SELECT count(*) FROM t');
    conn.closeSync();
    db.closeSync();
    return { records: Number(r.getRows()[0]![0]) };
  },

  async 'duckdb-own-units'(env) {
    const db = await DuckDBInstance.create(path.join(env.dir, 'own-units.duckdb'));
    const conn = await db.connect();
    if (env.memoryLimit) await conn.run(`SET memory_limit = '${env.memoryLimit}'`);
    await conn.run(
      `CREATE TABLE t AS SELECT * FROM read_json('${env.units[0]}', format = 'newline_delimited') LIMIT 0`,
    );
    for (const f of env.units) {
      await conn.run('BEGIN TRANSACTION');
      await conn.run(`INSERT INTO t BY NAME SELECT * FROM read_json('${f}', format = 'newline_delimited')`);
      await conn.run('COMMIT');
    }
    const r = await conn.runAndReadAll('SELECT count(*) FROM t');
    conn.closeSync();
    db.closeSync();
    return { records: Number(r.getRows()[0]![0]) };
  },

  async 'duckdb-file'(env) {
    const sink = duckdbSink(env, 'file.duckdb');
    return { records: await throughFiles(env, sink) };
  },

  async 'duckdb-rows'(env) {
    const sink = duckdbSink(env, 'rows.duckdb');
    return { records: await throughSink(env, sink, (f) => withTimestamps(parseJsonlFile(f))) };
  },

  async 'duckdb-chunk'(env) {
    return appenderRoute(env, 'chunk');
  },

  async 'duckdb-appender'(env) {
    if (env.records > 50_000) return { records: 0, note: 'skipped above 50k records (minutes)' };
    return appenderRoute(env, 'row');
  },

  'jsonl-rows': (env) => jsonlRows(env, 'jsonl', undefined),

  'jsonl-rows-gz1': (env) => jsonlRows(env, 'gz1', 1),

  'jsonl-rows-gz6': (env) => jsonlRows(env, 'gz6', 6),

  async 'jsonl-file'(env) {
    const sink = new JsonlSink({ type: 'jsonl', path: 'jfile', compress: true, gzip_level: 1, write: 'append' });
    return { records: await throughFiles(env, sink), outputBytes: await sizeOf(env, 'jfile') };
  },

  'parquet-rows': (env) => parquetRows(env, 'pq', 20_000),

  'parquet-rg-default': (env) => parquetRows(env, 'pq2', 122_880),
};

/** Decoded rows into a jsonl sink writing `sub`, plain or gzip at `gzipLevel`. */
async function jsonlRows(env: Env, sub: string, gzipLevel: number | undefined): Promise<CaseOutcome> {
  const sink = new JsonlSink({
    type: 'jsonl',
    path: sub,
    compress: gzipLevel !== undefined,
    gzip_level: gzipLevel ?? 1,
    write: 'append',
  });
  return { records: await throughSink(env, sink, (f) => parseJsonlFile(f)), outputBytes: await sizeOf(env, sub) };
}

/** Decoded rows (timestamps as the normalizer leaves them) into a zstd parquet sink writing `sub`. */
async function parquetRows(env: Env, sub: string, rowGroupSize: number): Promise<CaseOutcome> {
  const sink = new ParquetSink({
    type: 'parquet',
    path: sub,
    write: 'append',
    compression: 'zstd',
    row_group_size: rowGroupSize,
  });
  const records = await throughSink(env, sink, (f) => withTimestamps(parseJsonlFile(f)));
  return { records, outputBytes: await sizeOf(env, sub) };
}

/** The appender routes: table from the schema of the first unit (open parts as VARCHAR), units one at a time. */
async function appenderRoute(env: Env, mode: 'row' | 'chunk'): Promise<{ records: number }> {
  const schema = new InferredSchema();
  for await (const b of withTimestamps(parseJsonlFile(env.units[0]!))) schema.observe(b);
  const columns = [...schema.columns].map(([k, t]) => [k, closeOpenParts(t)] as const);
  const db = await DuckDBInstance.create(path.join(env.dir, `${mode}.duckdb`));
  const conn = await db.connect();
  if (env.memoryLimit) await conn.run(`SET memory_limit = '${env.memoryLimit}'`);
  await conn.run(`CREATE TABLE t (${columns.map(([k, t]) => `${quoteIdent(k)} ${duckdbType(t)}`).join(', ')})`);
  const names = columns.map(([k]) => k);
  let records = 0;
  for (const f of env.units) {
    const app = await conn.createAppender('t');
    const types = names.map((_, i) => app.columnType(i));
    for await (const b of withTimestamps(parseJsonlFile(f, 2048))) {
      if (mode === 'chunk') {
        const chunk = DuckDBDataChunk.create(types, b.length);
        chunk.setColumnsConverted(
          names.map((n) => b.map((r) => (r[n] ?? null) as JS)),
          JSToDuckDBValueConverter,
        );
        app.appendDataChunk(chunk);
      } else {
        for (const r of b) {
          for (let i = 0; i < names.length; i++) {
            const v = (r[names[i]!] ?? null) as JS;
            app.appendValue(JSToDuckDBValueConverter(v, types[i]!, JSToDuckDBValueConverter), types[i]);
          }
          app.endRow();
        }
      }
      records += b.length;
    }
    app.flushSync();
    app.closeSync();
  }
  conn.closeSync();
  db.closeSync();
  return { records };
}

/** The appender has no vector for DuckDB's NULL type. */
function closeOpenParts(t: LogicalType): LogicalType {
  if (t.kind === 'null') return VARCHAR;
  if (t.kind === 'list') return listOf(closeOpenParts(t.element));
  if (t.kind === 'struct') return structOf([...t.fields].map(([k, v]) => [k, closeOpenParts(v)]));
  return t;
}

/** Bytes of the route's output below `sub`, its `_sluice` bookkeeping left out. */
async function sizeOf(env: Env, sub: string): Promise<number> {
  let bytes = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (!e.name.startsWith('_sluice')) bytes += (await stat(p)).size;
    }
  };
  await walk(path.join(env.dir, sub));
  return bytes;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i === -1 ? undefined : argv[i + 1];
  };
  return {
    records: Number(get('records') ?? 50_000),
    concurrency: Number(get('concurrency') ?? 4),
    routes: (get('routes') ?? Object.keys(ROUTES).join(',')).split(',').filter(Boolean),
    memoryLimit: get('memory-limit'),
  };
}

/** The routes as child-process cases: the unit list is read in the (unmeasured) setup. */
const CASES: Record<string, CaseFn<Omit<Env, 'units'> & { partsDir: string }>> = Object.fromEntries(
  Object.entries(ROUTES).map(([name, route]) => [
    name,
    async ({ partsDir, ...env }: Omit<Env, 'units'> & { partsDir: string }) => {
      const units = (await readdir(partsDir)).sort().map((f) => path.join(partsDir, f));
      return () => route({ ...env, units });
    },
  ]),
);

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const w = await prepareWorkload(args.records, ['parts'], console.log);
  const units = await partFiles(w);
  console.log(
    `${args.records} records in ${units.length} units (${((await dirBytes(w.partsDir)) / 2 ** 20).toFixed(0)} MB gzip); concurrency ${args.concurrency}; ${os.cpus().length} cores`,
  );
  const results: CaseResult[] = [];
  for (const route of args.routes) {
    const dir = await mkdtemp(path.join(WORK_DIR, `sinks-${route}-`));
    try {
      const env = { dir, partsDir: w.partsDir, concurrency: args.concurrency, records: args.records };
      results.push(await runCase(import.meta.url, route, { ...env, memoryLimit: args.memoryLimit }));
    } catch (err) {
      console.log(`${route}: ${(err as Error).message}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const floor = results.find((r) => r.name === 'floor');
  const own = results.find((r) => r.name === 'duckdb-own');
  const ratio = (a: number, b: number | undefined, skip: boolean): string => (b && !skip ? (a / b).toFixed(2) : '');
  const rows = [
    [
      'route',
      'seconds',
      '× floor',
      '× duckdb-own',
      'CPU s',
      'CPU × floor',
      'CPU × own',
      'peak RSS MB',
      'records',
      'output MB',
    ],
  ];
  for (const r of results)
    rows.push([
      r.name,
      r.note ? '-' : r.seconds.toFixed(2),
      ratio(r.seconds, floor?.seconds, !!r.note),
      ratio(r.seconds, own?.seconds, !!r.note),
      r.note ? '-' : r.cpuSeconds.toFixed(2),
      ratio(r.cpuSeconds, floor?.cpuSeconds, !!r.note),
      ratio(r.cpuSeconds, own?.cpuSeconds, !!r.note),
      r.peakRssMb.toFixed(0),
      String(r.records),
      r.outputBytes !== undefined ? (r.outputBytes / 2 ** 20).toFixed(1) : (r.note ?? ''),
    ]);
  console.log(formatTable(rows));
}

async function dirBytes(dir: string): Promise<number> {
  let n = 0;
  for (const f of await readdir(dir)) n += (await stat(path.join(dir, f))).size;
  return n;
}

if (isCaseChild(import.meta.url)) await caseMain(CASES);
else await main();
