/**
 * `_sluice_state` in the target schema: one row per committed unit, with the unit's checkpoint, written in the same
 * transaction as the unit's rows, so a unit's data and its checkpoint exist together or not at all. The primary key
 * makes two processes committing the same unit at once end with one commit: the second waits for the first and
 * then inserts nothing.
 */
import type pg from 'pg';
import { qualified } from './types.js';

export const STATE_TABLE = '_sluice_state';

type Queryable = pg.Pool | pg.PoolClient;

export function stateTable(schema: string): string {
  return qualified(schema, STATE_TABLE);
}

export async function ensureStateTable(c: Queryable, schema: string): Promise<void> {
  await c.query(
    `CREATE TABLE IF NOT EXISTS ${stateTable(schema)} (
      pipeline text NOT NULL,
      table_name text NOT NULL,
      unit_id text NOT NULL,
      records bigint NOT NULL,
      checkpoint jsonb,
      committed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (pipeline, table_name, unit_id)
    )`,
  );
}

export async function committedUnitIds(
  c: Queryable,
  schema: string,
  pipeline: string,
  table: string,
): Promise<Set<string>> {
  const r = await c.query<{ unit_id: string }>(
    `SELECT unit_id FROM ${stateTable(schema)} WHERE pipeline = $1 AND table_name = $2`,
    [pipeline, table],
  );
  return new Set(r.rows.map((row) => row.unit_id));
}

export async function committedCheckpoints(
  c: Queryable,
  schema: string,
  pipeline: string,
  tables: readonly string[],
): Promise<Map<string, unknown>> {
  const r = await c.query<{ unit_id: string; checkpoint: unknown }>(
    `SELECT unit_id, checkpoint FROM ${stateTable(schema)}
      WHERE pipeline = $1 AND table_name = ANY($2) AND checkpoint IS NOT NULL ORDER BY committed_at`,
    [pipeline, tables],
  );
  return new Map(r.rows.map((row) => [row.unit_id, row.checkpoint]));
}

/**
 * Whether the unit committed, by any process or by an earlier attempt of this one — also one whose link died while
 * its COMMIT was on the way (connection.ts `commitInDoubt`): every attempt asks this before it loads anything.
 */
export async function isUnitCommitted(
  c: Queryable,
  schema: string,
  pipeline: string,
  table: string,
  unitId: string,
): Promise<boolean> {
  const r = await c.query(
    `SELECT 1 FROM ${stateTable(schema)} WHERE pipeline = $1 AND table_name = $2 AND unit_id = $3`,
    [pipeline, table, unitId],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Records the unit; false when another transaction committed it first (this one must then roll back). */
export async function insertStateRow(
  c: pg.PoolClient,
  schema: string,
  row: { pipeline: string; table: string; unitId: string; records: number; checkpoint: unknown },
): Promise<boolean> {
  const r = await c.query(
    `INSERT INTO ${stateTable(schema)} (pipeline, table_name, unit_id, records, checkpoint)
     VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT DO NOTHING`,
    [
      row.pipeline,
      row.table,
      row.unitId,
      row.records,
      row.checkpoint === undefined ? null : JSON.stringify(row.checkpoint),
    ],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function deleteStateRows(
  c: pg.PoolClient,
  schema: string,
  pipeline: string,
  table: string,
): Promise<void> {
  await c.query(`DELETE FROM ${stateTable(schema)} WHERE pipeline = $1 AND table_name = $2`, [pipeline, table]);
}

/** `replace`: the new generation's checkpoints become the table's. */
export async function moveStateRows(
  c: pg.PoolClient,
  schema: string,
  pipeline: string,
  from: string,
  to: string,
): Promise<void> {
  await c.query(`UPDATE ${stateTable(schema)} SET table_name = $3 WHERE pipeline = $1 AND table_name = $2`, [
    pipeline,
    from,
    to,
  ]);
}
