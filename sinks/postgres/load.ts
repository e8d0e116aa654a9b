/**
 * A unit's load: its rows and its `_sluice_state` row (with the unit's checkpoint) in ONE transaction, so both
 * exist or neither does. The transaction holds the table's advisory lock shared (schema changes hold it
 * exclusively, table.ts), re-reads the columns under it and encodes every value for the column's type as it is
 * now; when the table no longer fits the rows it commits nothing and says so, and the sink evolves it first.
 *
 * `streamUnit` copies the batches as they arrive (the sink looked ahead only far enough to type the table): the
 * COPY names every column of the table, so a later batch fits as long as the table holds its values. One that
 * does not (a new field, a wider type) cannot be made to fit inside the transaction — altering the table would
 * mean upgrading the shared lock while other writers hold it — so the transaction is rolled back and the sink
 * loads the unit again from the spool of what was sent plus the rest (`commitUnitRows` with `prefix`).
 */
import type pg from 'pg';
import { atFailpoint } from '../../src/core/failpoints.js';
import type { Batch, CommitResult, Row, UnitCommit } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { decidedColumns, type LogicalType } from '../../src/core/logical-type.js';
import type { TableNames } from './config.js';
import { inTransaction, SourceFailure } from './connection.js';
import { CopyWriter, copyRows, copySpool, type Spool } from './copy.js';
import { RowEncoder } from './encode.js';
import { createMergeStage, upsertFromStage } from './merge.js';
import { insertStateRow, isUnitCommitted } from './state.js';
import { fitsTable, lockKey, lockShared, readColumns, type Columns } from './table.js';
import { pgType, qualified } from './types.js';
import { quoteIdent } from '../../src/core/sql.js';

export interface UnitRows {
  pipeline: string;
  names: TableNames;
  unitId: string;
  /** The unit's cursor checkpoint, asked for as its `_sluice_state` row is written (the rows are drained by then). */
  commit: UnitCommit;
  batches: readonly Batch[];
  rows: number;
  /** The unit's decided columns. */
  incoming: ReadonlyMap<string, LogicalType>;
  /** `write: merge`'s key; undefined: the rows are appended. */
  primaryKey?: readonly string[];
  onUnstorable: (row: Row, reason: string) => void;
  /** Rows with nothing but nulls arrived while there is no table to hold them: they are not stored. */
  onNullRowsDropped: (rows: number) => void;
  /** Rows copied by an attempt that was rolled back, to be copied first. */
  prefix?: Prefix;
}

/** COPY text of a unit's first rows, encoded for the table's columns as they were (`types`, in COPY order). */
export interface Prefix {
  spool: Spool;
  types: Columns;
}

export interface StreamLoad extends Omit<UnitRows, 'batches' | 'rows' | 'prefix'> {
  /** Batches read ahead (the schema observed them). */
  head: readonly Batch[];
  /** The rest of the unit; each batch is observed into `schema` before it is copied. */
  rest: AsyncIterator<Batch>;
  schema: InferredSchema;
  spool: Spool;
}

/** A batch of the unit does not fit the table: the transaction was rolled back; `prefix` holds what was sent. */
export interface Diverged {
  diverged: { batch: Batch; prefix: Prefix };
}

/** Thrown inside the transaction to roll it back: another transaction committed the unit first. */
class CommittedElsewhere extends Error {}

async function nextBatch(rest: AsyncIterator<Batch>): Promise<IteratorResult<Batch>> {
  try {
    return await rest.next();
  } catch (err) {
    throw new SourceFailure(err);
  }
}

/** Thrown inside the transaction to roll it back: `batch` needs the table changed. */
class DivergedError extends Error {
  constructor(readonly result: Diverged) {
    super('the unit no longer fits the table');
  }
}

/**
 * Commits the unit while reading it, as `commitUnitRows` does; `{ diverged }` when a batch does not fit the table (its
 * rows and the rest of the unit are still to be read by the caller).
 */
export async function streamUnit(
  pool: pg.Pool,
  load: StreamLoad,
): Promise<CommitResult | { unfit: Columns | undefined } | Diverged> {
  const { names } = load;
  try {
    return await inTransaction(pool, async (c) => {
      const start = await beginUnit(c, load);
      if ('committedBefore' in start) return { committed: false, records: 0 };
      const { table } = start;
      if (!table || !fitsTable(table, load.incoming)) return { unfit: table };
      const target = qualified(names.schema, names.target);
      const into = load.primaryKey ? await createMergeStage(c, target) : target;
      // Every column of the table, not only the ones seen so far: later batches may fill the others.
      const columns = [...table.keys()];
      load.spool.reset();
      const writer = new CopyWriter(c, into, columns, new RowEncoder(columns, table), load.onUnstorable, load.spool);
      let records: number;
      try {
        for (const batch of load.head) await writer.write(batch);
        for (let next = await nextBatch(load.rest); !next.done; next = await nextBatch(load.rest)) {
          load.schema.observe(next.value);
          if (!fitsTable(table, decidedColumns(load.schema.columns))) {
            writer.spoolPending();
            throw new DivergedError({ diverged: { batch: next.value, prefix: { spool: load.spool, types: table } } });
          }
          await writer.write(next.value);
        }
        records = await writer.end();
      } catch (err) {
        writer.abort(err);
        throw err;
      }
      if (load.primaryKey) await upsertFromStage(c, target, columns, load.primaryKey);
      return commitState(c, load, records);
    });
  } catch (err) {
    if (err instanceof CommittedElsewhere) return { committed: false, records: 0 };
    if (err instanceof DivergedError) return err.result;
    throw err;
  }
}

/**
 * The start of a unit's transaction, for both ways of loading it: the table's lock taken shared, then whether any
 * process committed the unit already, then the table's columns as they are under the lock.
 */
async function beginUnit(
  c: pg.PoolClient,
  load: Pick<UnitRows, 'pipeline' | 'names' | 'unitId'>,
): Promise<{ committedBefore: true } | { table: Columns | undefined }> {
  const { names } = load;
  await lockShared(c, lockKey(names.schema, names.table));
  if (await isUnitCommitted(c, names.schema, load.pipeline, names.targetStateKey, load.unitId))
    return { committedBefore: true };
  return { table: await readColumns(c, names.schema, names.target) };
}

async function commitState(
  c: pg.PoolClient,
  load: Pick<UnitRows, 'pipeline' | 'names' | 'unitId' | 'commit'>,
  records: number,
): Promise<CommitResult> {
  await atFailpoint('postgres:after-data', load.unitId);
  const row = {
    pipeline: load.pipeline,
    table: load.names.targetStateKey,
    unitId: load.unitId,
    records,
    checkpoint: load.commit.checkpoint(),
  };
  if (!(await insertStateRow(c, load.names.schema, row))) throw new CommittedElsewhere();
  await atFailpoint('postgres:before-commit', load.unitId);
  return { committed: true, records };
}

/**
 * Commits the unit: `committed: false` when it was committed before (by any process); `{ unfit }` with the table's
 * columns when they do not hold the rows (nothing was written).
 */
export async function commitUnitRows(
  pool: pg.Pool,
  load: UnitRows,
): Promise<CommitResult | { unfit: Columns | undefined }> {
  try {
    return await inTransaction(pool, async (c) => {
      const start = await beginUnit(c, load);
      if ('committedBefore' in start) return { committed: false, records: 0 };
      const { table } = start;
      if ((load.incoming.size > 0 && !fitsTable(table, load.incoming)) || (load.primaryKey && !table))
        return { unfit: table };
      return commitState(c, load, await insertRows(c, load, table));
    });
  } catch (err) {
    if (err instanceof CommittedElsewhere) return { committed: false, records: 0 };
    throw err;
  }
}

async function insertRows(c: pg.PoolClient, load: UnitRows, table: Columns | undefined): Promise<number> {
  const target = qualified(load.names.schema, load.names.target);
  const columns = [...load.incoming.keys()];
  if (columns.length === 0) return insertNullRows(c, target, table, load.rows, load.onNullRowsDropped);
  const into = load.primaryKey ? await createMergeStage(c, target) : target;
  let records = load.prefix ? await copyPrefix(c, into, load.prefix, table!) : 0;
  records += await copyRows(c, into, new RowEncoder(columns, table!), columns, load.batches, load.onUnstorable);
  if (load.primaryKey) await upsertFromStage(c, target, [...table!.keys()], load.primaryKey);
  return records;
}

const PREFIX = quoteIdent('_sluice_prefix');
const PREFIX_SEQ = quoteIdent('_sluice_seq');

/**
 * The spooled rows, into `into` whose columns are now `table`: copied as text into a temporary table of the types
 * they were encoded for, then converted as the widening of the table converted its rows (table.ts).
 */
async function copyPrefix(c: pg.PoolClient, into: string, prefix: Prefix, table: Columns): Promise<number> {
  const columns = [...prefix.types.keys()];
  const defs = [...prefix.types].map(([k, t]) => `${quoteIdent(k)} ${pgType(t)}`);
  await c.query(
    `CREATE TEMP TABLE ${PREFIX} (${defs.join(', ')}, ${PREFIX_SEQ} bigint GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP`,
  );
  await copySpool(c, PREFIX, columns, prefix.spool);
  const values = columns.map((k) => {
    const col = quoteIdent(k);
    const from = pgType(prefix.types.get(k)!);
    const to = pgType(table.get(k)!);
    return from === to ? col : to === 'jsonb' ? `to_jsonb(${col})` : `${col}::${to}`;
  });
  const r = await c.query(
    `INSERT INTO ${into} (${columns.map(quoteIdent).join(', ')}) SELECT ${values.join(', ')} FROM ${PREFIX} ORDER BY ${PREFIX_SEQ}`,
  );
  await c.query(`DROP TABLE ${PREFIX}`);
  return r.rowCount ?? 0;
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
