/**
 * The pipelines the crash matrix's cells run (bench/crash-matrix.ts): the emulator they read from and the YAML of
 * each pipeline kind into each sink kind, sized so that units commit before, during and after a kill.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/company-profiles.js';
import type { startEmulator } from '../../src/emulator/server.js';
import type { CellSpec } from './crash-cells.js';
import { sinkPath, type Output, type PipelineKind, type SinkKind } from './crash-outputs.js';

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

export function emulatorOptions(): Parameters<typeof startEmulator>[0] {
  // Filter jobs take a fraction of a second at the real pace, which keeps the service clock the local one.
  return { apiKey: API_KEY, seed: DATA_SEED, size: 10_000, timeScale: 1, jobSchedulingMs: 100 };
}

/** Writes the cell's pipeline into `dir`; returns its output and the pipeline file. */
export function writePipeline(dir: string, c: CellSpec, url: string): Output & { file: string } {
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
