/**
 * The target table: its columns as logical types, creation, and schema evolution (ADD COLUMN, widening with ALTER
 * COLUMN TYPE … USING). Several processes (shards) may load one table at once, so every change of its definition
 * runs in a transaction holding the table's advisory lock exclusively, re-reads the columns under it, and changes
 * only what is still missing; unit transactions hold the same lock shared. Advisory lock first, table lock second,
 * in every transaction: the order never inverts, so writers wait for each other but never deadlock.
 */
import type pg from 'pg';
import { SluiceError } from '../../src/core/errors.js';
import { fitsColumns } from '../../src/schema/column-changes.js';
import { joinTypes } from '../../src/schema/join.js';
import { cloneType, type LogicalType } from '../../src/core/logical-type.js';
import { errorLine } from './connection.js';
import { fromPgColumn, pgType, qualified } from './types.js';
import { quoteIdent } from '../../src/core/sql.js';
import type { ColumnDdl, Columns } from '../../src/sink-kit/warehouse/evolve.js';

export type { Columns };

type Queryable = pg.Pool | pg.PoolClient;

/** Postgres truncates longer names, which would then never match the data's. */
const MAX_NAME_BYTES = 63;

/** Key of a table's advisory lock: one per table readers query, whichever generation is written. */
export function lockKey(schema: string, table: string): string {
  return `sluice:table:${schema}.${table}`;
}

export function schemaLockKey(schema: string): string {
  return `sluice:schema:${schema}`;
}

export async function lockExclusive(c: pg.PoolClient, key: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
}

export async function lockShared(c: pg.PoolClient, key: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))', [key]);
}

/** The table's columns in order, or undefined when it does not exist. */
export async function readColumns(c: Queryable, schema: string, table: string): Promise<Columns | undefined> {
  const r = await c.query<{ column_name: string; data_type: string; udt_name: string }>(
    `SELECT column_name, data_type, udt_name FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, table],
  );
  if (r.rows.length === 0) return undefined;
  return new Map(r.rows.map((row) => [row.column_name, fromPgColumn(row.data_type, row.udt_name)]));
}

export async function tableExists(c: Queryable, schema: string, table: string): Promise<boolean> {
  const r = await c.query('SELECT to_regclass($1) IS NOT NULL AS exists', [qualified(schema, table)]);
  return r.rows[0]?.exists === true;
}

/** Whether rows of `incoming` fit the table's columns as they are (undefined: no table yet). */
export function fitsTable(columns: Columns | undefined, incoming: ReadonlyMap<string, LogicalType>): boolean {
  return fitsColumns(columns, incoming, pgType);
}

export function checkNameLengths(names: Iterable<string>, label: string): void {
  for (const name of names)
    if (Buffer.byteLength(name) > MAX_NAME_BYTES)
      throw new SluiceError(`${label}: column name "${name}" is longer than Postgres allows (63 bytes)`, {
        hint: 'rename the field with the `rename` transform, or drop it with `select`',
      });
}

/** The first columns of a new table: the declared ones in their order (joined with the data's), then the data's. */
export function initialColumns(
  declared: ReadonlyMap<string, LogicalType> | undefined,
  incoming: ReadonlyMap<string, LogicalType>,
): Columns {
  const out: Columns = new Map();
  for (const [k, t] of declared ?? []) {
    const data = incoming.get(k);
    out.set(k, cloneType(data === undefined ? t : joinTypes(t, data, [k])));
  }
  for (const [k, t] of incoming) if (!out.has(k)) out.set(k, cloneType(t));
  return out;
}

export async function createTable(
  c: pg.PoolClient,
  schema: string,
  table: string,
  columns: ReadonlyMap<string, LogicalType>,
): Promise<void> {
  const defs = [...columns].map(([k, t]) => `${quoteIdent(k)} ${pgType(t)}`);
  await c.query(`CREATE TABLE ${qualified(schema, table)} (${defs.join(', ')})`);
}

/**
 * How Postgres changes a table's columns (warehouse/evolve.ts `evolveColumns` runs the plan), inside the caller's
 * transaction, which holds the table's lock exclusively.
 */
export function columnDdl(c: pg.PoolClient): ColumnDdl {
  return {
    typeName: pgType,
    add: (q, step) => `ALTER TABLE ${q} ADD COLUMN ${quoteIdent(step.column)} ${pgType(step.type)}`,
    widen: (q, { column, to }) => {
      const col = quoteIdent(column);
      const type = pgType(to);
      return `ALTER TABLE ${q} ALTER COLUMN ${col} TYPE ${type} USING ${type === 'jsonb' ? `to_jsonb(${col})` : `${col}::${type}`}`;
    },
    // Structs are jsonb whatever their fields: a widening is the column's, not a field's.
    widened: (step) => [{ column: step.column, change: 'widened', from: pgType(step.from), to: pgType(step.to) }],
    run: async (sql) => void (await c.query(sql)),
    errorLine,
  };
}

/** `write: merge`: the unique index `INSERT … ON CONFLICT` needs, named after the table it belongs to. */
export function keyIndexName(table: string): string {
  return `${table}__sluice_key`;
}

/**
 * Creates the key's unique index when missing. From Postgres 15 on, null keys are equal to each other (`NULLS NOT
 * DISTINCT`), as the duckdb sink's merge treats them; before 15 a row with a null key never matches one.
 */
export async function ensureKeyIndex(
  c: pg.PoolClient,
  schema: string,
  table: string,
  keys: readonly string[],
): Promise<void> {
  const version = await c.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
  const nullsEqual = Number(version.rows[0]?.v ?? 0) >= 150000 ? ' NULLS NOT DISTINCT' : '';
  await c.query(
    `CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(keyIndexName(table))} ON ${qualified(schema, table)} (${keys.map(quoteIdent).join(', ')})${nullsEqual}`,
  );
}
