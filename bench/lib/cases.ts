/**
 * The measured cases of `npm run bench`, each run by bench/lib/child.ts in a process of its own.
 *
 * Floors: what the machine can do without sluice — the JS floor (gunzip + split + JSON.parse) and DuckDB's own
 * `read_json` of the same part files sluice reads into a table and into Parquet, with DuckDB's defaults (its threads
 * read several files at once). DuckDB's load of the one .jsonl.gz is shown beside them (one file: one reader).
 * Sluice: real pipelines (a pipeline file, `runPipeline`, a `file` source over the workload's parts, one work unit
 * per part) into each sink; decoders (src/decode) on the JSON-array and CSV files.
 * References: stream-json's StreamArray and csv-parse, the libraries sluice's own JSON-array and CSV decoders
 * replaced.
 *
 * Each case imports its modules in its (unmeasured) setup: a case's peak RSS holds only what it uses.
 */
import path from 'node:path';
import { caseMain, isCaseChild, type CaseFn, type CaseOutcome } from './child.js';
import { partsPipelineCase } from './pipeline-case.js';
import { sizeOf } from './workload.js';

export interface CaseArgs {
  jsonlGz: string;
  partsDir: string;
  jsonGz: string;
  csvGz: string;
  /** An empty directory for the case's output (removed by the parent). */
  outDir: string;
  /** Units loaded at once by the sluice pipelines (the `file` source's `concurrency`). */
  concurrency: number;
  /** Extra keys for the sluice pipelines' sink (experiments: `memory_limit`, …). */
  sinkOptions?: Record<string, unknown>;
}

type Run = () => Promise<CaseOutcome>;

/** `file` source over the parts → `sink`, as a pipeline file loaded and run like `sluice run`. */
async function sluicePipeline(a: CaseArgs, sink: Record<string, unknown>, output: string): Promise<Run> {
  const run = await partsPipelineCase({
    name: 'bench',
    partsDir: a.partsDir,
    outDir: a.outDir,
    concurrency: a.concurrency,
    transforms: [],
    sink: { ...sink, ...a.sinkOptions },
  });
  return async () => ({ ...(await run()), outputBytes: await sizeOf(path.join(a.outDir, output)) });
}

/**
 * DuckDB's own load in a database of its own, its settings DuckDB's defaults; `records` counts what it wrote.
 * `fullSample`: `sample_size = -1`, and every file sampled (DuckDB samples the first 32 files otherwise), makes
 * DuckDB's reader see every key before it decides the columns, as sluice must (a sampled reader drops the keys and
 * widenings it did not sample, silently): the floor the sluice paths are held to. The sampled load is shown beside
 * it. `from`: the workload's part files (the ones sluice reads), or its one .jsonl.gz.
 */
async function duckdbOwn(
  a: CaseArgs,
  statement: (source: string) => string,
  records: string,
  fullSample: boolean,
  from: 'parts' | 'one file' = 'parts',
): Promise<Run> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const { quoteString } = await import('../../src/core/sql.js');
  const { readdir } = await import('node:fs/promises');
  const file = path.join(a.outDir, 'own.duckdb');
  const input = from === 'parts' ? path.join(a.partsDir, '*.jsonl.gz') : a.jsonlGz;
  const files = from === 'parts' ? (await readdir(a.partsDir)).filter((f) => f.endsWith('.jsonl.gz')).length : 1;
  const sample = fullSample ? `, sample_size = -1, maximum_sample_files = ${files}` : '';
  return async () => {
    const db = await DuckDBInstance.create(file);
    const conn = await db.connect();
    try {
      await conn.run(statement(`read_json(${quoteString(input)}, format = 'newline_delimited'${sample})`));
      const n = Number((await conn.runAndReadAll(records)).getRows()[0]![0]);
      await conn.run('CHECKPOINT');
      return { records: n, outputBytes: await sizeOf(a.outDir) };
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  };
}

async function jsFloor(file: string, parse = true): Promise<Run> {
  const { countJsonl, countLines } = await import('./jsonl-floor.js');
  return async () => ({ records: await (parse ? countJsonl(file) : countLines(file)) });
}

async function decoder(file: string, format: 'jsonl' | 'json' | 'csv'): Promise<Run> {
  const { decodeRecords } = await import('../decode.js');
  return async () => ({ records: await decodeRecords(file, format) });
}

const ownTable = (src: string): string => `CREATE TABLE t AS SELECT * FROM ${src}`;

function duckdbOwnParquet(a: CaseArgs, fullSample: boolean): Promise<Run> {
  const out = path.join(a.outDir, 'own.parquet').replaceAll("'", "''");
  return duckdbOwn(
    a,
    (src) => `COPY (SELECT * FROM ${src}) TO '${out}' (FORMAT parquet, COMPRESSION zstd)`,
    `SELECT count(*) FROM '${out}'`,
    fullSample,
  );
}

export const CASES: Record<string, CaseFn<CaseArgs>> = {
  'js-split': (a) => jsFloor(a.jsonlGz, false),

  'js-floor': (a) => jsFloor(a.jsonlGz),

  'duckdb-own-table': (a) => duckdbOwn(a, ownTable, 'SELECT count(*) FROM t', true),

  'duckdb-own-table-sampled': (a) => duckdbOwn(a, ownTable, 'SELECT count(*) FROM t', false),

  'duckdb-own-table-one-file': (a) => duckdbOwn(a, ownTable, 'SELECT count(*) FROM t', true, 'one file'),

  'duckdb-own-parquet': (a) => duckdbOwnParquet(a, true),

  'duckdb-own-parquet-sampled': (a) => duckdbOwnParquet(a, false),

  'sluice-duckdb': (a) => sluicePipeline(a, { type: 'duckdb', path: 'out.duckdb', table: 'companies' }, 'out.duckdb'),

  'sluice-parquet': (a) => sluicePipeline(a, { type: 'parquet', path: 'parquet' }, 'parquet'),

  'sluice-jsonl': (a) => sluicePipeline(a, { type: 'jsonl', path: 'jsonl' }, 'jsonl'),

  'decode-jsonl': (a) => decoder(a.jsonlGz, 'jsonl'),

  'decode-json': (a) => decoder(a.jsonGz, 'json'),

  'decode-csv': (a) => decoder(a.csvGz, 'csv'),

  'stream-json': async (a) => {
    const { streamJsonRecords } = await import('../decode.js');
    return async () => ({ records: await streamJsonRecords(a.jsonGz) });
  },

  'csv-parse': async (a) => {
    const { csvParseRecords } = await import('../decode.js');
    return async () => ({ records: await csvParseRecords(a.csvGz) });
  },
};

if (isCaseChild(import.meta.url)) await caseMain(CASES);
