/**
 * Lineage columns (`lineage: true` on a sink): every row the sink stores carries `_sluice_run_id`, the run that
 * loaded it (as in `sluice runs` and DuckDB's `_sluice_runs`), and `_sluice_loaded_at`, when its unit was handed to
 * the sink (ISO 8601, UTC; one value per unit), so a warehouse user can tell which load wrote a row.
 *
 * The option and its columns are declared in schema/lineage.ts, where every sink's schema reads them.
 *
 * Done here, once for every sink, by wrapping it: the rows get the two fields on their way in. A sink with lineage
 * loads no raw file natively (a file's bytes carry no such fields), so the engine decodes its units in JS — slower
 * on the fast path, the price of the columns.
 */
import type { Batch, CommitResult, Sink, UnitCommit, WorkUnit } from '../core/types.js';
import { LINEAGE_COLUMNS, LOADED_AT_COLUMN, RUN_ID_COLUMN } from '../schema/lineage.js';

export function withLineage(sink: Sink, runId: () => string): Sink {
  return {
    // The sink's limits, read when asked (after open), with the two columns this wrapper fills reserved; no native
    // load (a file's bytes carry no such fields) and the sink's own file output, if it has one.
    get capabilities() {
      const { limits, files } = sink.capabilities;
      return {
        ...(limits && { limits: { ...limits, reservedNames: { ...limits.reservedNames, ...LINEAGE_RESERVED } } }),
        ...(files && { files }),
      };
    },
    describe: () => sink.describe(),
    outputQuery: (limit) => sink.outputQuery(limit),
    open: (ctx) => sink.open(ctx.declared ? { ...ctx, declared: [...ctx.declared, ...LINEAGE_COLUMNS] } : ctx),
    committedUnits: () => sink.committedUnits(),
    committedCheckpoints: () => sink.committedCheckpoints(),
    drop: () => sink.drop(),
    currentColumns: () => sink.currentColumns(),
    typeName: (t) => sink.typeName(t),
    writeUnit: (unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> =>
      sink.writeUnit(unit, stamped(batches, runId(), new Date().toISOString()), commit),
    finish: () => sink.finish(),
    queryable: () => sink.queryable(),
    close: () => sink.close(),
  };
}

/** A record's own field of a lineage column's name would be overwritten: the store gate refuses it. */
const LINEAGE_RESERVED: Readonly<Record<string, string>> = {
  [RUN_ID_COLUMN]: 'the lineage column naming the run that loaded the row',
  [LOADED_AT_COLUMN]: 'the lineage column telling when the row was loaded',
};

async function* stamped(batches: AsyncIterable<Batch>, runId: string, loadedAt: string): AsyncIterable<Batch> {
  for await (const b of batches) yield b.map((r) => ({ ...r, [RUN_ID_COLUMN]: runId, [LOADED_AT_COLUMN]: loadedAt }));
}
