/**
 * The measured cases of `npm run bench`, each run by bench/lib/child.ts in a process of its own.
 *
 * Floors: what the machine can do without sluice — the JS floor (gunzip + split + JSON.parse) and DuckDB's own
 * `read_json` of the same .jsonl.gz into a table and into Parquet, with DuckDB's defaults.
 * Sluice: real pipelines (a pipeline file, `runPipeline`, a `file` source over the workload's parts, one work unit
 * per part) into each sink; decoders (src/decode) on the JSON-array and CSV files.
 * References: stream-json's StreamArray and csv-parse, the libraries sluice's own JSON-array and CSV decoders
 * replaced.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Logger } from '../../src/core/types.js';
import { runPipeline } from '../../src/engine/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { quoteString } from '../../src/schema/duckdb-types.js';
import { csvParseRecords, decodeRecords, streamJsonRecords } from '../decode.js';
import { caseMain, isEntry, type CaseFn, type CaseOutcome } from './child.js';
import { countBatches, parseJsonlFile } from './jsonl-floor.js';
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

const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (m) => process.stderr.write(`${m}\n`),
};

/** `file` source over the parts → `sink`, as a pipeline file loaded and run like `sluice run`. */
async function sluicePipeline(a: CaseArgs, sink: Record<string, unknown>, output: string): Promise<CaseOutcome> {
  const file = path.join(a.outDir, 'bench.yaml');
  const config = {
    version: 1,
    name: 'bench',
    service: { base_url: 'emulator', api_key: 'bench' },
    source: { type: 'file', paths: [a.partsDir], format: 'jsonl', concurrency: a.concurrency },
    sink: { ...sink, ...a.sinkOptions },
  };
  // JSON is YAML: no need for a YAML writer.
  await writeFile(file, JSON.stringify(config, null, 2));
  const pipeline = await loadPipeline(file, {});
  const summary = await runPipeline(
    pipeline,
    { fresh: true, logFormat: 'text', quiet: true, progress: false },
    { log: silent },
  );
  if (summary.deadLetters > 0) throw new Error(`${summary.deadLetters} dead letters`);
  return { records: summary.records, outputBytes: await sizeOf(path.join(a.outDir, output)) };
}

/** DuckDB's own load, default settings, in a database of its own. */
async function duckdbOwn(a: CaseArgs, statement: (source: string) => string, output: string): Promise<CaseOutcome> {
  const db = await DuckDBInstance.create(path.join(a.outDir, 'own.duckdb'));
  const conn = await db.connect();
  try {
    const source = `read_json(${quoteString(a.jsonlGz)}, format = 'newline_delimited')`;
    const r = await conn.run(statement(source));
    const records = Number(r.rowsChanged);
    await conn.run('CHECKPOINT');
    return { records, outputBytes: await sizeOf(path.join(a.outDir, output)) };
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

export const CASES: Record<string, CaseFn<CaseArgs>> = {
  'js-floor': async (a) => ({ records: await countBatches(parseJsonlFile(a.jsonlGz)) }),

  'duckdb-own-table': (a) => duckdbOwn(a, (src) => `CREATE TABLE t AS SELECT * FROM ${src}`, 'own.duckdb'),

  'duckdb-own-parquet': (a) =>
    duckdbOwn(
      a,
      (src) =>
        `COPY (SELECT * FROM ${src}) TO ${quoteString(path.join(a.outDir, 'own.parquet'))} (FORMAT parquet, COMPRESSION zstd)`,
      'own.parquet',
    ),

  'sluice-duckdb': (a) => sluicePipeline(a, { type: 'duckdb', path: 'out.duckdb', table: 'companies' }, 'out.duckdb'),

  'sluice-parquet': (a) => sluicePipeline(a, { type: 'parquet', path: 'parquet' }, 'parquet'),

  'sluice-jsonl': (a) => sluicePipeline(a, { type: 'jsonl', path: 'jsonl' }, 'jsonl'),

  'decode-jsonl': async (a) => ({ records: await decodeRecords(a.jsonlGz, 'jsonl') }),

  'decode-json': async (a) => ({ records: await decodeRecords(a.jsonGz, 'json') }),

  'decode-csv': async (a) => ({ records: await decodeRecords(a.csvGz, 'csv') }),

  'stream-json': async (a) => ({ records: await streamJsonRecords(a.jsonGz) }),

  'csv-parse': async (a) => ({ records: await csvParseRecords(a.csvGz) }),
};

if (isEntry(import.meta.url)) await caseMain(CASES);
