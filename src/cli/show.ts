/**
 * `--show N`: the first rows of every output of a pipeline, read back through DuckDB, one JSON object per row with
 * long text shortened. Each sink says how its output is read (`Sink.outputQuery`) and how it is named
 * (`Sink.describe`): this file knows no sink type.
 */
import type { ComponentDeps } from '../contracts/component.js';
import type { Sink } from '../core/types.js';
import { buildSink, sinkConfigs, type SinkConfig } from '../engine/components.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { findDef } from '../pipeline/registry.js';
import type { CliIo } from './io.js';

const MAX_TEXT = 60;

/** DuckDB's JS values as JSON: BIGINT as a number when exact, timestamps as ISO 8601, blobs by size. */
function printable(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  if (Array.isArray(value)) return value.map(printable);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, printable(v)]));
  return value;
}

const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** One screen line per row, roughly: long text is cut, nested values that would run long are summarised. */
function shorten(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (typeof v === 'string') out[k] = v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) + '…' : v;
    else if (v !== null && typeof v === 'object' && JSON.stringify(v).length > MAX_TEXT)
      out[k] = Array.isArray(v) ? `[${count(v.length, 'item')}]` : `{${count(Object.keys(v).length, 'field')}}`;
    else out[k] = v;
  }
  return out;
}

/** The first `limit` rows of what `sink` wrote. Needs no `open()`: the sink only says where to read. */
export async function readRows(sink: Sink, limit: number): Promise<Record<string, unknown>[]> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const { database, sql } = sink.outputQuery(limit);
  // The sinks share one instance per database file in this process (fromCache): opening a second one would fail.
  const instance = database ? await DuckDBInstance.fromCache(database) : await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(sql);
    return reader.getRowObjectsJS().map((row) => printable(row) as Record<string, unknown>);
  } finally {
    connection.closeSync();
  }
}

/** A sink built from its config for reading back: building opens nothing and needs no service. */
export function sinkForShow(config: SinkConfig, baseDir: string): Sink {
  const deps: ComponentDeps = {
    log: { debug() {}, info() {}, warn() {}, error() {} },
    baseDir,
    client: () => Promise.reject(new Error('showing outputs needs no service')),
  };
  // Defaults filled in, as a loaded pipeline's config has them.
  const parsed = findDef('sink', config.type).schema.safeParse(config);
  return buildSink((parsed.success ? parsed.data : config) as SinkConfig, deps);
}

/**
 * A file sink's glob that matches nothing yet (a run that wrote no rows). DuckDB reports it as an IO error whose
 * only distinguishing mark is its text: @duckdb/node-api exposes no error type or code to check instead.
 */
function isNoFilesFound(err: unknown): boolean {
  return err instanceof Error && /No files found/i.test(err.message);
}

export async function showOutputs(io: CliIo, pipeline: LoadedPipeline, limit: number): Promise<void> {
  for (const config of sinkConfigs(pipeline.config)) {
    const sink = sinkForShow(config, pipeline.baseDir);
    io.out(`\n== ${sink.describe()}: first ${limit} row${limit === 1 ? '' : 's'}`);
    try {
      const rows = await readRows(sink, limit);
      if (rows.length === 0) io.out('(no rows)');
      for (const row of rows) io.out(JSON.stringify(shorten(row)));
    } catch (err) {
      if (isNoFilesFound(err)) {
        io.out('(no rows)');
        continue;
      }
      // Showing is a courtesy after a successful run: a failure to read back is reported, not fatal.
      io.err(`warn: cannot show ${sink.describe()}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
}
