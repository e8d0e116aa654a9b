/**
 * `write: merge`: the unit's rows are copied into a temporary staging table (dropped at commit), then upserted
 * into the table with `INSERT … ON CONFLICT (key) DO UPDATE`; within the unit the last row for a key wins, as in
 * the duckdb sink. The staging table numbers rows in arrival order for that.
 */
import type pg from 'pg';
import { quoteIdent } from '../../src/core/sql.js';

const STAGE = quoteIdent('_sluice_merge_stage');
const SEQ = quoteIdent('_sluice_seq');

/** Creates the unit's staging table (like `table`, numbering rows in arrival order); returns its name. */
export async function createMergeStage(client: pg.PoolClient, table: string): Promise<string> {
  await client.query(`CREATE TEMP TABLE ${STAGE} (LIKE ${table}) ON COMMIT DROP`);
  await client.query(`ALTER TABLE ${STAGE} ADD COLUMN ${SEQ} bigint GENERATED ALWAYS AS IDENTITY`);
  return STAGE;
}

/** Upserts the staged rows into `table` (whose columns are `tableColumns`) inside the caller's transaction. */
export async function upsertFromStage(
  client: pg.PoolClient,
  table: string,
  tableColumns: readonly string[],
  keys: readonly string[],
): Promise<void> {
  const all = tableColumns.map(quoteIdent).join(', ');
  const key = keys.map(quoteIdent).join(', ');
  const rest = tableColumns.filter((c) => !keys.includes(c));
  const onConflict =
    rest.length === 0
      ? 'DO NOTHING'
      : `DO UPDATE SET ${rest.map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`).join(', ')}`;
  await client.query(
    `INSERT INTO ${table} (${all}) SELECT DISTINCT ON (${key}) ${all} FROM ${STAGE} ORDER BY ${key}, ${SEQ} DESC ON CONFLICT (${key}) ${onConflict}`,
  );
}
