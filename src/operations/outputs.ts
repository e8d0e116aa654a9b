/**
 * What a pipeline's outputs hold, read back outside a run: their first rows (`--show`), their columns (`sluice
 * schema`), their row counts (`sluice report`). Each sink says how its output is read (`Sink.outputQuery`: a query
 * DuckDB runs over the sink's table or files, or the sink's own reader for a store DuckDB cannot reach here, a
 * Postgres server) and how it is named (`Sink.describe`): nothing here knows a sink type, and nothing is opened for
 * writing — the sinks are built by the runtime, never opened.
 */
import { existsSync } from 'node:fs';
import type { DuckDbOutputQuery, Logger, OutputReader, OwnOutputQuery, Row, Sink } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { withRuntime } from '../runtime/runtime.js';

/** The pipeline's sinks, built (not opened) without a service, for `fn` to read their outputs back. */
export function withOutputs<T>(
  pipeline: LoadedPipeline,
  opts: { log: Logger; command: string },
  fn: (sinks: readonly Sink[]) => Promise<T>,
): Promise<T> {
  return withRuntime(pipeline, { ...opts, noService: true }, (rt) => fn(rt.sinkList));
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

/** Runs `sql` (over the sink's output) in DuckDB; undefined when the sink's database file does not exist yet. */
async function duckdbQuery(q: DuckDbOutputQuery, wrap: (sql: string) => string): Promise<Row[] | undefined> {
  const { database, sql } = q;
  // Opening a DuckDB file that does not exist would create it.
  if (database !== undefined && !existsSync(database)) return undefined;
  const { DuckDBInstance } = await import('@duckdb/node-api');
  // The sinks share one instance per database file in this process (fromCache): opening a second one would fail.
  const instance = database ? await DuckDBInstance.fromCache(database) : await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(wrap(sql));
    return reader.getRowObjectsJS().map((row) => printable(row) as Row);
  } finally {
    connection.closeSync();
  }
}

/**
 * A file sink's glob that matches nothing yet (a run that wrote no rows). DuckDB reports it as an IO error whose
 * only distinguishing mark is its text: @duckdb/node-api exposes no error type or code to check instead.
 */
export function isNothingWritten(err: unknown): boolean {
  return err instanceof Error && /No files found/i.test(err.message);
}

/** A sink that reads its own store (`OwnOutputQuery`): `fn` with its reader, closed after. */
async function withOwnReader<T>(q: OwnOutputQuery, fn: (r: OutputReader) => Promise<T>): Promise<T> {
  const reader = await q.reader();
  try {
    return await fn(reader);
  } finally {
    await reader.close();
  }
}

/** The first `limit` rows of what `sink` wrote; none when nothing was written yet. */
export async function firstRows(sink: Sink, limit: number): Promise<Row[]> {
  const q = sink.outputQuery(limit);
  if ('reader' in q) return withOwnReader(q, async (r) => (await r.rows(limit)).map((row) => printable(row) as Row));
  try {
    return (await duckdbQuery(q, (sql) => sql)) ?? [];
  } catch (err) {
    if (isNothingWritten(err)) return [];
    throw err;
  }
}

/** The columns of what `sink` wrote so far; undefined when nothing was written yet or it cannot be read now. */
export async function writtenColumns(sink: Sink): Promise<{ name: string; type: string }[] | undefined> {
  try {
    const q = sink.outputQuery(1);
    if ('reader' in q) return await withOwnReader(q, (r) => r.columns());
    const rows = await duckdbQuery(q, (sql) => `DESCRIBE ${sql}`);
    return rows?.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
  } catch {
    // No table or no files yet, or a run holds the database: the columns are still "inferred from the data".
    return undefined;
  }
}

/** How many rows `sink` holds (0 when nothing was written yet). */
export async function countRows(sink: Sink): Promise<number> {
  const q = sink.outputQuery(Number.MAX_SAFE_INTEGER);
  if ('reader' in q) return withOwnReader(q, (r) => r.count());
  try {
    const rows = await duckdbQuery(q, (sql) => `SELECT count(*) AS n FROM (${sql})`);
    return Number(rows?.[0]?.n ?? 0);
  } catch (err) {
    if (isNothingWritten(err)) return 0;
    throw err;
  }
}
