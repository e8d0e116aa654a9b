/**
 * `write: replace`: a run fills the next generation (`<table>__sluice_next`, with its own checkpoints), which takes
 * the table's place in one transaction when the run finishes. A failed run leaves the old table to readers.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { failpoint } from '../../src/core/failpoints.js';
import { quoteIdent } from '../../src/core/sql.js';
import type { TableNames } from './config.js';
import { deleteStateRows, moveStateRows } from './state.js';
import { qualified, tableExists } from './table.js';
import { inTransaction } from './transaction.js';

/** A fresh run starts a new generation: whatever an unfinished run left goes. */
export async function dropNextGeneration(conn: DuckDBConnection, names: TableNames, pipeline: string): Promise<void> {
  await inTransaction(conn, async () => {
    await conn.run(`DROP TABLE IF EXISTS ${qualified(names.schema, names.target)}`);
    await deleteStateRows(conn, pipeline, names.targetStateKey);
  });
}

/** The next generation takes the table's place, with its checkpoints, in one transaction. */
export async function swapInNextGeneration(conn: DuckDBConnection, names: TableNames, pipeline: string): Promise<void> {
  const final = qualified(names.schema, names.table);
  await inTransaction(conn, async () => {
    if (await tableExists(conn, names.schema, names.target)) {
      await conn.run(`DROP TABLE IF EXISTS ${final}`);
      await conn.run(`ALTER TABLE ${qualified(names.schema, names.target)} RENAME TO ${quoteIdent(names.table)}`);
    } else if (await tableExists(conn, names.schema, names.table)) {
      // The run wrote no rows: the replacement is an empty table.
      await conn.run(`DELETE FROM ${final}`);
    }
    await deleteStateRows(conn, pipeline, names.stateKey);
    await moveStateRows(conn, pipeline, names.targetStateKey, names.stateKey);
    failpoint('duckdb:replace-swap');
  });
}

/**
 * `sluice state drop`: the table (and any next generation) with its checkpoints, in one transaction: a crash leaves
 * both or neither.
 */
export async function dropTableAndState(conn: DuckDBConnection, names: TableNames, pipeline: string): Promise<void> {
  await inTransaction(conn, async () => {
    for (const [table, key] of new Map([
      [names.table, names.stateKey],
      [names.target, names.targetStateKey],
    ])) {
      await conn.run(`DROP TABLE IF EXISTS ${qualified(names.schema, table)}`);
      await deleteStateRows(conn, pipeline, key);
    }
  });
}
