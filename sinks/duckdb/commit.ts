/**
 * Commit a unit: its staged rows decided against the table as it is now, the table prepared when they do not fit
 * (table-columns.ts), then loaded with its `_sluice_state` row in one transaction (load.ts), in the file's load
 * slot. Both paths end here, rows staged from JS and the raw JSONL file of the native path (native.ts).
 */
import { SluiceError } from '../../src/core/errors.js';
import type { CommitResult, SchemaChange, UnitCommit, WorkUnit } from '../../src/core/types.js';
import { checkKeysPresent } from '../../src/schema/merge-keys.js';
import type { AttemptLoad } from '../../src/sink-kit/warehouse/system-tables.js';
import {
  keptChanging,
  MAX_FIT_ROUNDS,
  nullRowsDropped,
  UNCOMMITTED_HINT,
  withChanges,
} from '../../src/sink-kit/warehouse/unit-result.js';
import type { DuckDBSinkConfig, TableNames } from './config.js';
import { commitUnitRows } from './load.js';
import type { DuckDBSession } from './session.js';
import type { StagedUnit } from './stage.js';
import type { TableColumns } from './table-columns.js';
import { fitTextToTemporal } from './temporal-text.js';

/** What a unit's commit needs of its sink. */
export interface CommitScope {
  session: DuckDBSession;
  table: TableColumns;
  config: DuckDBSinkConfig;
  names: TableNames;
  label: string;
  load: AttemptLoad;
}

export async function commitStaged(
  s: CommitScope,
  unit: WorkUnit,
  staged: StagedUnit,
  commit: UnitCommit,
): Promise<CommitResult> {
  const { session, table, config } = s;
  const ctx = session.ctx;
  staged = table.withDeclared(ctx, staged);
  table.checkUnit(ctx, staged.schema.conflicts);
  const changes: SchemaChange[] = [];
  try {
    for (let round = 0; round < MAX_FIT_ROUNDS; round++) {
      // Decided against the table as it is now; another unit may change it before this one loads: then again.
      const incoming = await session.read((conn) => fitTextToTemporal(conn, staged, table.columns));
      const typed = incoming.size > 0;
      if (typed && !table.fits(incoming))
        changes.push(...(await session.locked(() => table.prepare(session, incoming))));
      if (staged.rows > 0 && config.primary_key) checkKeysPresent(config.primary_key, incoming, s.label);
      // Appends share the table (a schema change waits for them); a merge deletes rows, so it has it alone.
      const exclusive = config.write === 'merge';
      const r = await session.db.withLoadSlot(() =>
        (exclusive ? session.locked.bind(session) : session.appending.bind(session))(async () => {
          if (typed && !table.fits(incoming)) return undefined;
          return session.withUnitConnection((conn) =>
            commitUnitRows(conn, {
              pipeline: ctx.pipeline,
              names: s.names,
              unitId: unit.id,
              commit,
              unit: { ...staged, columns: incoming },
              table: table.columns && new Map(table.columns),
              ...(config.primary_key && { primaryKey: config.primary_key }),
              onNullRowsDropped: (rows) => ctx.log.warn(nullRowsDropped(s.label, rows)),
            }),
          );
        }),
      );
      if (!r) continue;
      s.load.committed(r);
      if (r.committed) changes.unshift(...table.openChanges.splice(0));
      return withChanges(r, changes);
    }
    throw keptChanging(s.label, unit.id);
  } catch (err) {
    throw err instanceof SluiceError ? err : unitFailure(s.label, `could not load unit ${unit.id}`, err);
  }
}

export function unitFailure(label: string, what: string, err: unknown): SluiceError {
  const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
  return new SluiceError(`${label}: ${what}: ${msg}`, { hint: UNCOMMITTED_HINT, cause: err });
}
