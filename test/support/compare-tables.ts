/**
 * Two sinks' tables of one run compared as data, whichever database holds them: rows, distinct keys, and a checksum
 * over every value in a canonical form (instants as ISO text, keys sorted, null fields left out), so a Postgres
 * `timestamptz` and a DuckDB `TIMESTAMP WITH TIME ZONE` of the same instant, or a `jsonb` and a DuckDB STRUCT of the
 * same fields, give the same checksum.
 */
import { createHash } from 'node:crypto';
import { DuckDBInstance } from '@duckdb/node-api';
import type { PostgresServer } from './postgres-server.js';

type Obj = Record<string, any>;

/** A value as JSON would carry it, whichever database it came from: instants as ISO text, no null fields. */
export function canonical(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') {
    if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return `${v}T00:00:00.000Z`;
    if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}(:\d{2})?|Z)$/.test(v))
      return new Date(v.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00')).toISOString();
    return v;
  }
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    const out: Obj = {};
    for (const k of Object.keys(v).sort()) {
      const x = canonical((v as Obj)[k]);
      if (x !== null && x !== undefined) out[k] = x;
    }
    return out;
  }
  return v;
}

export interface Digest {
  rows: number;
  keys: number;
  checksum: string;
}

/** The digest of a table's rows: `key` names the columns that identify a row, `leaveOut` those that differ by run. */
export function digest(rows: Obj[], key: string[], leaveOut: string[] = []): Digest {
  const lines = rows.map((r) => {
    const o: Obj = { ...r };
    for (const k of leaveOut) delete o[k];
    return JSON.stringify(canonical(o));
  });
  const checksum = createHash('sha256').update(lines.sort().join('\n')).digest('hex').slice(0, 16);
  return {
    rows: rows.length,
    keys: new Set(rows.map((r) => JSON.stringify(key.map((k) => canonical(r[k]))))).size,
    checksum,
  };
}

/** Every row of `schema.table` in `database`, as Postgres renders it in JSON. */
export async function pgTableRows(server: PostgresServer, database: string, table: string, schema = 'public') {
  return (await server.query(database, `SELECT to_jsonb(t) AS j FROM "${schema}"."${table}" t`)).map((r) => r.j as Obj);
}

/** Every row of `table` in the DuckDB file `file` (opened read-only, closed afterwards). */
export async function duckTableRows(file: string, table: string): Promise<Obj[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    await conn.run(`ATTACH '${file.replace(/'/g, "''")}' AS w (READ_ONLY)`);
    return (await conn.runAndReadAll(`SELECT * FROM w."${table}"`)).getRowObjectsJS() as Obj[];
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}
