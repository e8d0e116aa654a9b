/**
 * `--show N`: the first rows of every output of a pipeline, read back through DuckDB (a DuckDB table directly;
 * Parquet and JSONL outputs through DuckDB's readers), one JSON object per row with long text shortened.
 */
import path from 'node:path';
import { describeSink, sinkConfigs } from '../engine/components.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { CliIo } from './io.js';

const MAX_TEXT = 80;

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

function shorten(value: unknown): unknown {
  if (typeof value === 'string') return value.length > MAX_TEXT ? value.slice(0, MAX_TEXT) + '…' : value;
  if (Array.isArray(value)) return value.map(shorten);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shorten(v)]));
  return value;
}

export async function readRows(sink: SinkConfig, baseDir: string, limit: number): Promise<Record<string, unknown>[]> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const { database, sql } = outputQuery(sink, baseDir, limit);
  // The sinks share one instance per database file in this process (fromCache): opening a second one would fail.
  const instance = database ? await DuckDBInstance.fromCache(database) : await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(sql);
    return reader.getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    connection.closeSync();
  }
}

export async function showOutputs(io: CliIo, pipeline: LoadedPipeline, limit: number): Promise<void> {
  for (const sink of sinkConfigs(pipeline.config) as SinkConfig[]) {
    io.out(`\n== ${describeSink(sink)}: first ${limit} row${limit === 1 ? '' : 's'}`);
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
      io.err(`warn: cannot show ${describeSink(sink)}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
}
