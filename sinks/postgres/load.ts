/**
 * A unit's load: its rows and its `_sluice_state` row (with the unit's checkpoint) in ONE transaction, so both
 * exist or neither does. The transaction holds the table's advisory lock shared (schema changes hold it
 * exclusively, table.ts), re-reads the columns under it and encodes every value for the column's type as it is
 * now; when the table no longer fits the rows it commits nothing and says so, and the sink evolves it first.
 */
import type pg from 'pg';
import { failpoint } from '../../src/core/failpoints.js';
import type { Batch, CommitResult, Row } from '../../src/core/types.js';
import type { LogicalType } from '../../src/schema/logical-type.js';
import type { TableNames } from './config.js';
import { inTransaction } from './connection.js';
import { copyRows } from './copy.js';
import { RowEncoder } from './encode.js';
import { mergeRows } from './merge.js';
import { insertStateRow, isUnitCommitted } from './state.js';
import { fitsTable, lockKey, lockShared, readColumns, type Columns } from './table.js';
import { qualified, quoteIdent } from './types.js';

export interface UnitLoad {
  pipeline: string;
  names: TableNames;
  unitId: string;
  checkpoint: unknown;
  batches: readonly Batch[];
  rows: number;
  /** The unit's decided columns. */
  incoming: ReadonlyMap<string, LogicalType>;
  /** `write: merge`'s key; undefined: the rows are appended. */
  primaryKey?: readonly string[];
  /** Runs inside the transaction after the rows went in and before the `_sluice_state` row (a test seam). */
  beforeCheckpoint?: (unitId: string) => void | Promise<void>;
  onUnstorable: (row: Row, reason: string) => void;
  /** Rows with nothing but nulls arrived while there is no table to hold them: they are not stored. */
  onNullRowsDropped: (rows: number) => void;
}

/** Thrown inside the transaction to roll it back: another transaction committed the unit first. */
class CommittedElsewhere extends Error {}

/**
 * Commits the unit: `committed: false` when it was committed before (by any process); `{ unfit }` with the table's
 * columns when they do not hold the rows (nothing was written).
 */
export async function loadUnit(pool: pg.Pool, load: UnitLoad): Promise<CommitResult | { unfit: Columns | undefined }> {
  const { pipeline, names, unitId } = load;
  try {
    return await inTransaction(pool, async (c) => {
      await lockShared(c, lockKey(names.schema, names.table));
      if (await isUnitCommitted(c, names.schema, pipeline, names.targetStateKey, unitId))
        return { committed: false, records: 0 };
      const table = await readColumns(c, names.schema, names.target);
      if ((load.incoming.size > 0 && !fitsTable(table, load.incoming)) || (load.primaryKey && !table))
        return { unfit: table };
      const records = await insertRows(c, load, table);
      await load.beforeCheckpoint?.(unitId);
      failpoint('postgres:after-data');
      const row = { pipeline, table: names.targetStateKey, unitId, records, checkpoint: load.checkpoint };
      if (!(await insertStateRow(c, names.schema, row))) throw new CommittedElsewhere();
      return { committed: true, records };
    });
  } catch (err) {
    if (err instanceof CommittedElsewhere) return { committed: false, records: 0 };
    throw err;
  }
}

async function insertRows(c: pg.PoolClient, load: UnitLoad, table: Columns | undefined): Promise<number> {
  const target = qualified(load.names.schema, load.names.target);
  const columns = [...load.incoming.keys()];
  if (columns.length === 0) return insertNullRows(c, target, table, load.rows, load.onNullRowsDropped);
  const encoder = new RowEncoder(columns, table!);
  if (load.primaryKey)
    return mergeRows(c, target, [...table!.keys()], load.primaryKey, encoder, columns, load.batches, load.onUnstorable);
  return copyRows(c, target, encoder, columns, load.batches, load.onUnstorable);
}

/** Rows whose every value is null: nothing to type a column by, but still rows of the table when it exists. */
async function insertNullRows(
  c: pg.PoolClient,
  target: string,
  table: Columns | undefined,
  rows: number,
  onDropped: (rows: number) => void,
): Promise<number> {
  if (rows === 0) return 0;
  const first = table?.keys().next().value;
  if (first === undefined) {
    onDropped(rows);
    return 0;
  }
  await c.query(`INSERT INTO ${target} (${quoteIdent(first)}) SELECT NULL FROM generate_series(1, $1)`, [rows]);
  return rows;
}
