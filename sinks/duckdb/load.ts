/**
 * A unit's load: its staged rows and its `_sluice_state` row in ONE transaction, so both exist or neither does.
 * The table must already fit the rows (the sink prepares it first); rows are read with the table's column types.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { atFailpoint } from '../../src/core/failpoints.js';
import type { CommitResult, UnitCommit } from '../../src/core/types.js';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import { quoteIdent } from '../../src/core/sql.js';
import type { TableNames } from './config.js';
import { mergeRows } from './merge.js';
import { readStagedSql } from './read.js';
import type { StagedUnit } from './stage.js';
import { insertStateRow, isUnitCommitted } from './state.js';
import { qualified, type Columns } from './table.js';
import { inTransaction } from './transaction.js';

export interface UnitRows {
  pipeline: string;
  names: TableNames;
  unitId: string;
  /** The unit's cursor checkpoint, asked for as the transaction commits (the rows are drained by then). */
  commit: UnitCommit;
  unit: StagedUnit;
  /** The table's columns as the load starts (undefined: there is no table yet). */
  table: Columns | undefined;
  /** `write: merge`'s key; undefined: the rows are appended. */
  primaryKey?: readonly string[];
  /** Rows with nothing but nulls arrived while there is no table to hold them: they are not stored. */
  onNullRowsDropped: (rows: number) => void;
}

/** Commits the unit; `committed: false` when an earlier load (of any process) committed it first. */
export async function commitUnitRows(conn: DuckDBConnection, load: UnitRows): Promise<CommitResult> {
  const { pipeline, names, unitId } = load;
  return inTransaction(conn, async () => {
    // Checked again inside the transaction: the sink's quick look before staging may be stale.
    if (await isUnitCommitted(conn, pipeline, names.targetStateKey, unitId)) return { committed: false, records: 0 };
    const records = await insertRows(conn, load);
    await atFailpoint('duckdb:after-data', unitId);
    await insertStateRow(conn, pipeline, names.targetStateKey, unitId, records, load.commit.checkpoint());
    return { committed: true, records };
  });
}

/** The unit's data statement(s): its file read with the table's types, appended or merged. Returns the rows. */
export async function insertRows(conn: DuckDBConnection, load: UnitRows): Promise<number> {
  const { unit, table: columns } = load;
  const table = qualified(load.names.schema, load.names.target);
  if (unit.columns.size === 0) return insertNullRows(conn, table, columns, unit.rows, load.onNullRowsDropped);
  // Timestamps are read as TIMESTAMPTZ: DuckDB's TIMESTAMP parser ignores a UTC offset in the text.
  const source = readStagedSql(
    unit,
    [...unit.columns.keys()].map((k) => [k, duckdbType(columns!.get(k)!, { forRead: true })]),
  );
  if (load.primaryKey) return mergeRows(conn, table, source, load.primaryKey);
  const r = await conn.run(`INSERT INTO ${table} BY NAME SELECT * FROM ${source}`);
  return Number(r.rowsChanged);
}

/** Rows whose every value is null: nothing to type a column by, but still rows of the table when it exists. */
async function insertNullRows(
  conn: DuckDBConnection,
  table: string,
  columns: Columns | undefined,
  rows: number,
  onDropped: (rows: number) => void,
): Promise<number> {
  if (rows === 0) return 0;
  const first = columns?.keys().next().value;
  if (first === undefined) {
    onDropped(rows);
    return 0;
  }
  await conn.run(`INSERT INTO ${table} (${quoteIdent(first)}) SELECT NULL FROM range(${rows})`);
  return rows;
}
