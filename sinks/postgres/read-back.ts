/**
 * `--show`, `sluice schema` and the report reading a Postgres sink's table back (OwnOutputQuery): DuckDB reads the
 * other sinks' outputs, but could reach a Postgres server only through an extension it downloads at run time. A pool
 * of its own (the sink is not opened), every query read-only as the checks' are (read-only.ts).
 */
import type pg from 'pg';
import type { LogicalType } from '../../src/core/logical-type.js';
import type { OutputReader, Row } from '../../src/core/types.js';
import type { PostgresSinkConfig, TableNames } from './config.js';
import { connectionUrl } from './config.js';
import { createPool } from './connection.js';
import { readOnlyQuery } from './read-only.js';
import { readColumns, tableExists } from './table.js';
import { pgType, qualified } from './types.js';

export async function postgresOutputReader(
  config: Pick<PostgresSinkConfig, 'url'>,
  names: Pick<TableNames, 'schema' | 'table'>,
): Promise<OutputReader> {
  // An idle connection failing is of no interest to a reader that is about to close.
  const pool: pg.Pool = createPool(connectionUrl(config), () => undefined);
  const relation = qualified(names.schema, names.table);
  let exists: Promise<boolean> | undefined;
  const written = (): Promise<boolean> => (exists ??= tableExists(pool, names.schema, names.table));
  return {
    rows: async (limit) => {
      if (!(await written())) return [];
      const columns = await readColumns(pool, names.schema, names.table);
      const rows = await readOnlyQuery(pool, `SELECT * FROM ${relation} LIMIT ${Math.max(0, Math.floor(limit))}`);
      return rows.map((row) => numbersOf(row, columns));
    },
    columns: async () => {
      const columns = await readColumns(pool, names.schema, names.table);
      return columns && [...columns].map(([name, type]) => ({ name, type: pgType(type) }));
    },
    count: async () => {
      if (!(await written())) return 0;
      const [row]: Row[] = await readOnlyQuery(pool, `SELECT count(*) AS n FROM ${relation}`);
      return Number(row?.n ?? 0);
    },
    close: () => pool.end(),
  };
}

/**
 * The driver gives `bigint` columns as strings (a JS number cannot hold every int8): as numbers where they are exact,
 * as DuckDB's read-back gives them, so `--show` prints a row the same whichever sink holds it.
 */
function numbersOf(row: Row, columns: ReadonlyMap<string, LogicalType> | undefined): Row {
  const out: Row = { ...row };
  for (const [name, type] of columns ?? []) {
    const v = out[name];
    if (type.kind === 'bigint') out[name] = exactNumber(v);
    else if (type.kind === 'list' && type.element.kind === 'bigint' && Array.isArray(v)) out[name] = v.map(exactNumber);
  }
  return out;
}

function exactNumber(v: unknown): unknown {
  return typeof v === 'string' && Number.isSafeInteger(Number(v)) ? Number(v) : v;
}
