/** Reading outputs back as a reader would, and comparing them as data. */
import { existsSync } from 'node:fs';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { canonical } from '../../support/compare-tables.js';

export type Obj = Record<string, any>;

let reader: Promise<DuckDBConnection> | undefined;
let attached = 0;

/** One in-memory DuckDB for every read of the test file: a new instance per read costs more than the read. */
function readerConnection(): Promise<DuckDBConnection> {
  return (reader ??= (async () => {
    const conn = await (await DuckDBInstance.create(':memory:')).connect();
    await conn.run(`SET TimeZone = 'UTC'`);
    return conn;
  })());
}

/**
 * Rows of `sql` in an in-memory DuckDB, with the DuckDB file `attach` (if given) attached read-only as `w` (and
 * detached after: the sink's next run in this process must find it unshared); [] when that file does not exist yet
 * or the relation is missing (nothing committed yet).
 */
export async function duckRows(attach: string | undefined, sql: string): Promise<Obj[]> {
  if (attach !== undefined && !existsSync(attach)) return [];
  const conn = await readerConnection();
  const alias = `w${++attached}`;
  if (attach !== undefined) await conn.run(`ATTACH '${attach.replace(/'/g, "''")}' AS ${alias} (READ_ONLY)`);
  try {
    const reader = await conn.runAndReadAll(sql.replace(/\bw\./g, `${alias}.`)).catch((err: Error) => {
      if (/does not exist|not found/i.test(err.message)) return undefined;
      throw err;
    });
    return (reader?.getRowObjectsJS() ?? []).map((row) => canonical(row) as Obj);
  } finally {
    if (attach !== undefined) await conn.run(`DETACH ${alias}`);
  }
}

/** Each row in its canonical form (instants as ISO text, keys sorted, nulls left out), without `leaveOut`. */
export function canonicalRows(rows: readonly Obj[], leaveOut: readonly string[] = []): Obj[] {
  return rows.map((r) => {
    const o = canonical(r) as Obj;
    for (const k of leaveOut) delete o[k];
    return o;
  });
}

/** The values of `column`, sorted (as text): a table's keys to compare with what the service holds. */
export function sortedValues(rows: readonly Obj[], column: string): string[] {
  return rows.map((r) => String(r[column])).sort();
}

/** Rows as sorted JSON lines: two outputs hold the same data when these are equal. */
export function asLines(rows: readonly Obj[], leaveOut: readonly string[] = []): string[] {
  return canonicalRows(rows, leaveOut)
    .map((r) => JSON.stringify(r))
    .sort();
}

/** Keys seen more than once. */
export function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const v of values) (seen.has(v) ? twice : seen).add(v);
  return [...twice].sort();
}
