/**
 * `write: replace`: a run fills the next generation (`<table>__sluice_next`, with its own checkpoints), which takes
 * the table's place in one transaction when the run finishes: readers see yesterday's table or today's, never
 * half. A failed run leaves the old table to readers.
 */
import type pg from 'pg';
import type { TableNames } from './config.js';
import { inTransaction } from './connection.js';
import { deleteStateRows, moveStateRows } from './state.js';
import { lockExclusive, lockKey, tableExists } from './table.js';
import { qualified } from './types.js';
import { quoteIdent } from '../../src/core/sql.js';

/** A fresh run starts a new generation: whatever an unfinished run left goes. */
export async function dropNextGeneration(pool: pg.Pool, names: TableNames, pipeline: string): Promise<void> {
  await inTransaction(pool, async (c) => {
    await lockExclusive(c, lockKey(names.schema, names.table));
    await c.query(`DROP TABLE IF EXISTS ${qualified(names.schema, names.target)}`);
    await deleteStateRows(c, names.schema, pipeline, names.targetStateKey);
  });
}

/** The next generation takes the table's place, with its checkpoints, in one transaction. */
export async function swapInNextGeneration(pool: pg.Pool, names: TableNames, pipeline: string): Promise<void> {
  const final = qualified(names.schema, names.table);
  await inTransaction(pool, async (c) => {
    await lockExclusive(c, lockKey(names.schema, names.table));
    if (await tableExists(c, names.schema, names.target)) {
      await c.query(`DROP TABLE IF EXISTS ${final}`);
      await c.query(`ALTER TABLE ${qualified(names.schema, names.target)} RENAME TO ${quoteIdent(names.table)}`);
    } else if (await tableExists(c, names.schema, names.table)) {
      // The run wrote no rows: the replacement is an empty table.
      await c.query(`DELETE FROM ${final}`);
    }
    await deleteStateRows(c, names.schema, pipeline, names.stateKey);
    await moveStateRows(c, names.schema, pipeline, names.targetStateKey, names.stateKey);
  });
}

/**
 * `sluice state drop`: the table (and any next generation) with its checkpoints, in one transaction: a crash leaves
 * both or neither.
 */
export async function dropTableAndState(pool: pg.Pool, names: TableNames, pipeline: string): Promise<void> {
  await inTransaction(pool, async (c) => {
    await lockExclusive(c, lockKey(names.schema, names.table));
    for (const [table, key] of new Map([
      [names.table, names.stateKey],
      [names.target, names.targetStateKey],
    ])) {
      await c.query(`DROP TABLE IF EXISTS ${qualified(names.schema, table)}`);
      await deleteStateRows(c, names.schema, pipeline, key);
    }
  });
}
