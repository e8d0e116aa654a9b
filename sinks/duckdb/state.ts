/**
 * The system tables in the database's `main` schema (src/sink-kit/warehouse/system-tables.ts): `_sluice_state`, one row
 * per committed unit with its checkpoint, written in the unit's transaction; `_sluice_runs`, one row per run.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteString } from '../../src/core/sql.js';
import { systemTableSql } from '../../src/sink-kit/warehouse/system-tables.js';

export const STATE_TABLE = 'main._sluice_state';
const RUNS_TABLE = 'main._sluice_runs';

const SQL = systemTableSql(
  { text: 'VARCHAR', integer: 'INTEGER', bigint: 'BIGINT', timestamp: 'TIMESTAMP', json: 'JSON' },
  { state: STATE_TABLE, runs: RUNS_TABLE },
  // No primary key on `_sluice_state`: one process writes a DuckDB file, and a unit's transaction checks first.
  { startedAt: '$7::TIMESTAMPTZ::TIMESTAMP', now: 'now()::TIMESTAMP', stateKey: false },
);

export async function ensureSystemTables(conn: DuckDBConnection): Promise<void> {
  await conn.run(SQL.createState);
  // Tables written before checkpoints existed get the column (null: those units had none).
  await conn.run(`ALTER TABLE ${STATE_TABLE} ADD COLUMN IF NOT EXISTS checkpoint JSON`);
  await conn.run(SQL.createRuns);
}

/** An attempt's row in `_sluice_runs` (`AttemptLoad.runRow`): the start read as UTC, stored as TIMESTAMP. */
export async function recordRun(conn: DuckDBConnection, values: (string | number)[]): Promise<void> {
  await conn.run(SQL.upsertRun, values);
}

function where(pipeline: string, table: string): string {
  return `pipeline = ${quoteString(pipeline)} AND table_name = ${quoteString(table)}`;
}

export async function committedUnitIds(conn: DuckDBConnection, pipeline: string, table: string): Promise<Set<string>> {
  const r = await conn.runAndReadAll(`SELECT unit_id FROM ${STATE_TABLE} WHERE ${where(pipeline, table)}`);
  return new Set(r.getRows().map((row) => String(row[0])));
}

export async function isUnitCommitted(
  conn: DuckDBConnection,
  pipeline: string,
  table: string,
  unitId: string,
): Promise<boolean> {
  const r = await conn.runAndReadAll(
    `SELECT 1 FROM ${STATE_TABLE} WHERE ${where(pipeline, table)} AND unit_id = ${quoteString(unitId)} LIMIT 1`,
  );
  return r.currentRowCount > 0;
}

export async function insertStateRow(
  conn: DuckDBConnection,
  pipeline: string,
  table: string,
  unitId: string,
  records: number,
  checkpoint?: unknown,
): Promise<void> {
  const text = checkpoint === undefined ? undefined : JSON.stringify(checkpoint);
  await conn.run(
    `INSERT INTO ${STATE_TABLE} (pipeline, table_name, unit_id, records, committed_at, checkpoint) VALUES (${quoteString(pipeline)}, ${quoteString(table)}, ${quoteString(unitId)}, ${records}, now()::TIMESTAMP, ${text === undefined ? 'NULL' : quoteString(text)})`,
  );
}

/** Unit id → checkpoint, for the committed units of `table` that have one. */
export async function committedCheckpoints(
  conn: DuckDBConnection,
  pipeline: string,
  table: string,
): Promise<Map<string, unknown>> {
  const r = await conn.runAndReadAll(
    `SELECT unit_id, checkpoint FROM ${STATE_TABLE} WHERE ${where(pipeline, table)} AND checkpoint IS NOT NULL`,
  );
  return new Map(r.getRows().map((row) => [String(row[0]), JSON.parse(String(row[1])) as unknown]));
}

export async function deleteStateRows(conn: DuckDBConnection, pipeline: string, table: string): Promise<void> {
  await conn.run(`DELETE FROM ${STATE_TABLE} WHERE ${where(pipeline, table)}`);
}

/** `replace`: the new generation's checkpoints become the table's. */
export async function moveStateRows(conn: DuckDBConnection, pipeline: string, from: string, to: string): Promise<void> {
  await conn.run(`UPDATE ${STATE_TABLE} SET table_name = ${quoteString(to)} WHERE ${where(pipeline, from)}`);
}
