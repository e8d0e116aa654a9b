/**
 * `--show N`: the first rows of every output of a pipeline, read back through DuckDB (a DuckDB table directly;
 * Parquet and JSONL outputs through DuckDB's readers), one JSON object per row with long text shortened.
 */
import path from 'node:path';
import { describeSink, sinkConfigs } from '../engine/components.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { CliIo } from './io.js';

const MAX_TEXT = 60;

type SinkConfig = { type: string; path?: string; table?: string; schema?: string; [k: string]: unknown };

const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;
const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** The query that reads a sink's output, and the database it runs in (undefined: in memory). */
export function outputQuery(sink: SinkConfig, baseDir: string, limit: number): { database?: string; sql: string } {
  const where = path.resolve(baseDir, String(sink.path ?? '.'));
  switch (sink.type) {
    case 'duckdb': {
      const table = sink.schema ? `${ident(sink.schema)}.${ident(String(sink.table))}` : ident(String(sink.table));
      return { database: where, sql: `SELECT * FROM ${table} LIMIT ${limit}` };
    }
    case 'parquet':
      return {
        sql: `SELECT * FROM read_parquet(${literal(path.join(where, '**', '*.parquet'))}, hive_partitioning = true, union_by_name = true) LIMIT ${limit}`,
      };
    case 'jsonl':
      return {
        sql: `SELECT * FROM read_json_auto(${literal(path.join(where, '**', '*.jsonl*'))}, format = 'newline_delimited', union_by_name = true) LIMIT ${limit}`,
      };
    default:
      throw new Error(`--show cannot read ${sink.type} outputs`);
  }
}

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

export async function readRows(sink: SinkConfig, baseDir: string, limit: number): Promise<Record<string, unknown>[]> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const { database, sql } = outputQuery(sink, baseDir, limit);
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

export async function showOutputs(io: CliIo, pipeline: LoadedPipeline, limit: number): Promise<void> {
  for (const sink of sinkConfigs(pipeline.config) as SinkConfig[]) {
    io.out(`\n== ${describeSink(sink, pipeline.baseDir)}: first ${limit} row${limit === 1 ? '' : 's'}`);
    try {
      const rows = await readRows(sink, pipeline.baseDir, limit);
      if (rows.length === 0) io.out('(no rows)');
      for (const row of rows) io.out(JSON.stringify(shorten(row)));
    } catch (err) {
      if (/No files found/i.test((err as Error).message)) {
        io.out('(no rows)');
        continue;
      }
      // Showing is a courtesy after a successful run: a failure to read back is reported, not fatal.
      io.err(`warn: cannot show ${describeSink(sink, pipeline.baseDir)}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
}
