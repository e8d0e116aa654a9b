/**
 * The system tables in the target schema (src/sink-kit/warehouse/system-tables.ts): `_sluice_state`, one row per committed
 * unit with its checkpoint, written in the unit's transaction; `_sluice_runs`, one row per run. The state table's
 * primary key makes two processes committing the same unit at once end with one commit: the second waits for the
 * first and then inserts nothing.
 */
import type pg from 'pg';
import { systemTableSql } from '../../src/sink-kit/warehouse/system-tables.js';
import { qualified } from './types.js';

export const STATE_TABLE = '_sluice_state';

type Queryable = pg.Pool | pg.PoolClient;

function stateTable(schema: string): string {
  return qualified(schema, STATE_TABLE);
}

/** The statements in `schema`; `_sluice_state`'s key stops two processes committing one unit twice. */
function sql(schema: string) {
  return systemTableSql(
    { text: 'text', integer: 'integer', bigint: 'bigint', timestamp: 'timestamptz', json: 'jsonb' },
    { state: stateTable(schema), runs: qualified(schema, '_sluice_runs') },
    { startedAt: '$7', now: 'now()', stateKey: true },
  );
}

export async function ensureSystemTables(c: Queryable, schema: string): Promise<void> {
  const { createState, createRuns } = sql(schema);
  await c.query(createState);
  await c.query(createRuns);
}

/** An attempt's row in `_sluice_runs` (`AttemptLoad.runRow`). */
export async function recordRun(c: Queryable, schema: string, values: (string | number)[]): Promise<void> {
  await c.query(sql(schema).upsertRun, values);
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
