/**
 * `write: replace`: a run fills the next generation (`<table>__sluice_next`, with its own state rows), which takes
 * the table's place when the run finishes, in ONE statement: `RENAME TABLE t TO t__sluice_old, t__sluice_next TO t`.
 * ClickHouse 18.16 renames a chain of tables under its global lock, "atomic as a whole from the point of view of the
 * client" (its InterpreterRenameQuery): a query names the old table or the new one, never neither. (Current releases
 * keep that for Ordinary databases; for Atomic databases they offer EXCHANGE TABLES, which 18.16 lacks — not tested
 * here.) A failed run leaves the old table to readers.
 *
 * The swap and its state rows cannot share a transaction, so a `swapping` marker (a state row of the next
 * generation, named after the run) is written before the RENAME: a rerun of the run that finds it goes on from where
 * the swap stopped — the RENAME if the next table is still there, then the DROP of the old one, then the state rows
 * moved in ONE insert (the table's old units superseded, the next generation's copied under the table, the next
 * generation's and the marker superseded).
 */
import { failpoint } from '../../src/core/failpoints.js';
import type { ClickHouseNames } from './config.js';
import type { Server } from './connection.js';
import { moveGeneration, stateRow, supersedeAll, unitRow, writeState } from './state.js';
import { createTableSql, readColumns, type ChColumns, type TableShape } from './table.js';
import { qualified } from './types.js';

/** The swap marker's unit id (no unit id has no `/`), one per run. */
function swapMarker(runId: string | undefined): string {
  return `_sluice_swap:${runId ?? ''}`;
}

/** A new run starts a new generation: whatever an unfinished run left goes, its table first. */
export async function dropNextGeneration(server: Server, names: ClickHouseNames, pipeline: string): Promise<void> {
  // The table first: state rows of an older run name units the new run never plans, but rows left in a table
  // whose state rows are gone would be loaded beside.
  await server.exec(`DROP TABLE IF EXISTS ${qualified(names.schema, names.target)}`);
  await server.exec(`DROP TABLE IF EXISTS ${qualified(names.schema, names.old)}`);
  await supersedeAll(server, names.schema, pipeline, [names.targetStateKey]);
}

export interface SwapScope {
  server: Server;
  names: ClickHouseNames;
  pipeline: string;
  runId: string | undefined;
  shape: TableShape;
  /** Columns of a replacement when the run brought no rows and there is no table to take them from. */
  declared: ChColumns | undefined;
}

/** The next generation takes the table's place; its state rows become the table's. */
export async function swapInNextGeneration(s: SwapScope): Promise<void> {
  const { server, names, pipeline } = s;
  const db = names.schema;
  const marker = swapMarker(s.runId);
  const pending = (await unitRow(server, db, pipeline, names.targetStateKey, marker))?.status === 'swapping';
  let next = await readColumns(server, db, names.target);
  if (!pending) {
    if (!next) {
      // The run wrote no rows: the replacement is an empty table (the live one's columns, or the declared ones).
      const columns = (await readColumns(server, db, names.table)) ?? s.declared;
      if (columns) await server.exec(createTableSql(qualified(db, names.target), columns, s.shape));
      next = columns;
    }
    await writeState(server, db, [stateRow(pipeline, names.targetStateKey, marker, 'swapping')]);
  }
  failpoint('clickhouse:replace-swap');
  if (next) {
    const live = await readColumns(server, db, names.table);
    await server.exec(`DROP TABLE IF EXISTS ${qualified(db, names.old)}`);
    await server.exec(
      live
        ? `RENAME TABLE ${qualified(db, names.table)} TO ${qualified(db, names.old)}, ${qualified(db, names.target)} TO ${qualified(db, names.table)}`
        : `RENAME TABLE ${qualified(db, names.target)} TO ${qualified(db, names.table)}`,
    );
  }
  failpoint('clickhouse:after-swap');
  await server.exec(`DROP TABLE IF EXISTS ${qualified(db, names.old)}`);
  await moveGeneration(server, db, pipeline, names.stateKey, names.targetStateKey);
}
