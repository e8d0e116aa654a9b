/**
 * A unit's commit, in steps that each appear whole or not at all (ClickHouse has no multi-statement transaction):
 *
 *   1. stage     its rows stream into the unit's staging table (stage.ts), which no reader queries;
 *   2. align     the target is created or evolved to hold the staged columns, and the staging table to match it;
 *   3. intent    `_sluice_state` gets the unit's row as `publishing`, naming the load (its rows' `_sluice_load`),
 *                with the unit's records and checkpoint;
 *   4. attach    `ALTER TABLE target ATTACH PARTITION tuple() FROM stage`: the staged parts join the target in one
 *                step — readers see none of the unit's rows, then all of them;
 *   5. commit    the unit's row again, now `committed` (a newer version: it supersedes the intent);
 *   6. clean     the staging table is dropped.
 *
 * A crash or a failed request between two steps leaves a unit that `settle` finishes before anything else touches
 * it (the next attempt of the unit, the next `open()`): a `publishing` row whose load is in the target was attached
 * — step 5 is written from the intent, and the unit is not loaded again; one whose load is not there was not —
 * the intent is superseded by `deleted` and the unit is loaded again. Before step 3 nothing of the unit is anywhere
 * a reader or the state looks; after step 4 its rows are there once, whatever happens next. So a reader sees every
 * record once at every moment, and after a rerun exactly once; the unit's checkpoint becomes the cursor's at step 5
 * (or when `settle` writes it).
 */
import { SluiceError } from '../../src/core/errors.js';
import { atFailpoint } from '../../src/core/failpoints.js';
import type { Batch, CommitResult, SchemaChange, UnitCommit, WorkUnit } from '../../src/core/types.js';
import { fitsColumns } from '../../src/schema/column-changes.js';
import { describeChange } from '../../src/sink-kit/warehouse/evolve.js';
import { nullRowsDropped, withChanges } from '../../src/sink-kit/warehouse/unit-result.js';
import { errorCode, guarded } from './connection.js';
import { jsonText } from './encode.js';
import { stageUnit, unitHash, type StageScope, type StagedUnit } from './stage.js';
import { stateRow, unitRow, writeState, type StateRow } from './state.js';
import { createTableSql, evolveTable, logicalColumns, readColumns, sameShape } from './table.js';
import { chTypeName, literal, qualified, quoteIdent } from './types.js';
import { LOAD_COLUMN } from './config.js';

/** Rounds of aligning a unit's staging table with a target that other writers keep changing, before giving up. */
const MAX_ALIGN_ROUNDS = 8;
/** ClickHouse's "Tables have different structure": the target changed between the alignment and the ATTACH. */
const DIFFERENT_STRUCTURE = 122;

export type UnitScope = StageScope;

/** Loads the unit (the caller found it neither committed nor pending: `settle` ran). */
export async function loadUnit(
  s: UnitScope,
  unit: WorkUnit,
  batches: AsyncIterable<Batch>,
  commit: UnitCommit,
): Promise<CommitResult> {
  const { server, names, label, ctx } = s;
  const staged = await guarded(label, `could not stage unit ${unit.id}`, () => stageUnit(s, unit, batches));
  try {
    s.table.note(ctx, label, staged.schema.conflicts);
    if (staged.nullRowsDropped > 0) ctx.log.warn(nullRowsDropped(label, staged.nullRowsDropped));
    const checkpoint = commit.checkpoint();
    const row = stateRow(ctx.pipeline, names.targetStateKey, unit.id, 'committed', {
      loadId: staged.staged ? staged.loadId : '',
      records: staged.records,
      checkpoint: checkpoint === undefined ? '' : jsonText(checkpoint),
    });
    const changes = await guarded(label, `could not load unit ${unit.id}`, async () => {
      const changed = staged.staged ? await publish(s, unit, staged, row) : [];
      await atFailpoint('clickhouse:after-attach', unit.id);
      await writeState(server, names.schema, [row]);
      return changed;
    });
    return withChanges({ committed: true, records: row.records }, changes);
  } finally {
    if (staged.staged)
      await server.exec(`DROP TABLE IF EXISTS ${qualified(names.schema, staged.stage)}`).catch(() => undefined);
  }
}

/** Steps 2–4: the target made to match the staging table, the intent, the ATTACH. */
async function publish(s: UnitScope, unit: WorkUnit, staged: StagedUnit, row: StateRow): Promise<SchemaChange[]> {
  const { server, names, label } = s;
  const changes: SchemaChange[] = [];
  let intended = false;
  await s.table.ddl.run(async () => {
    for (let round = 0; round < MAX_ALIGN_ROUNDS; round++) {
      changes.push(...(await align(s, staged.stage)));
      if (!intended) {
        await writeState(server, names.schema, [{ ...row, status: 'publishing' }]);
        intended = true;
      }
      await atFailpoint('clickhouse:after-intent', unit.id);
      try {
        await server.exec(
          `ALTER TABLE ${qualified(names.schema, names.target)} ATTACH PARTITION tuple() FROM ${qualified(names.schema, staged.stage)}`,
        );
        return;
      } catch (err) {
        // Another process changed the target since the alignment: align again.
        if (errorCode(err) !== DIFFERENT_STRUCTURE) throw err;
        s.table.forget();
      }
    }
    throw keptChanging(label, unit.id);
  });
  return changes;
}

/**
 * The target created from the staging table (the first unit's) or evolved to hold its columns, then the staging
 * table evolved to hold the target's: ATTACH takes parts only between tables of the same columns and types.
 */
async function align(s: UnitScope, stage: string): Promise<SchemaChange[]> {
  const { server, names, label, ctx, config } = s;
  const keys = config.primary_key ?? [];
  const target = qualified(names.schema, names.target);
  const changes: SchemaChange[] = [];
  for (let round = 0; round < MAX_ALIGN_ROUNDS; round++) {
    const [have, staged] = await Promise.all([
      readColumns(server, names.schema, names.target),
      readColumns(server, names.schema, stage),
    ]);
    if (!staged) throw new SluiceError(`${label}: the staging table ${stage} is gone`, { hint: 'run again' });
    if (!have) {
      await server.exec(createTableSql(target, staged, config.primary_key ? { keys: config.primary_key } : {}));
      ctx.log.info(`${label}: created table ${names.schema}.${names.target}`);
      continue;
    }
    const incoming = logicalColumns(staged);
    if (!fitsColumns(logicalColumns(have), incoming, chTypeName)) {
      const made = await evolveTable(server, target, have, incoming, s.table.conflicts.all, keys);
      for (const ch of made) ctx.log.info(`${label}: ${describeChange(ch)}`);
      changes.push(...made);
      s.table.note(ctx, label);
      continue;
    }
    if (!sameShape(have, staged)) {
      await evolveTable(
        server,
        qualified(names.schema, stage),
        staged,
        logicalColumns(have),
        s.table.conflicts.all,
        keys,
      );
      continue;
    }
    s.table.set(have);
    return changes;
  }
  throw keptChanging(label, stage);
}

function keptChanging(label: string, what: string): SluiceError {
  return new SluiceError(`${label}: the table kept changing under ${what}`, {
    hint: 'another process keeps altering the table: run again once it is done',
  });
}

/** Whether the load `loadId` has rows in `table` (which may not exist). */
async function attached(s: StageScope, table: string, loadId: string): Promise<boolean> {
  if (!(await readColumns(s.server, s.names.schema, table))) return false;
  const rows = await s.server.rows<{ n: number }>(
    `SELECT 1 AS n FROM ${qualified(s.names.schema, table)} WHERE ${quoteIdent(LOAD_COLUMN)} = ${literal(loadId)} LIMIT 1`,
  );
  return rows.length > 0;
}

/**
 * Finishes a unit an earlier attempt left `publishing` (see the header): `committed` when its load reached
 * `table`, else `deleted`; its staging table goes either way. Returns the row written.
 */
export async function settle(s: StageScope, pending: StateRow, table: string): Promise<StateRow> {
  const { server, names } = s;
  const done = await attached(s, table, pending.load_id);
  const row: StateRow = done
    ? { ...pending, status: 'committed' }
    : stateRow(pending.pipeline, pending.table_name, pending.unit_id, 'deleted');
  await writeState(server, names.schema, [row]);
  await server.exec(`DROP TABLE IF EXISTS ${qualified(names.schema, names.stage(pending.unit_id, unitHash))}`);
  return row;
}

/**
 * Where the unit stands before an attempt loads it: `committed` (by this process, another, or an earlier attempt
 * whose ATTACH went through while its answer was lost — then `settle` finishes it), or not.
 */
export async function unitStatus(s: StageScope, unitId: string): Promise<StateRow | undefined> {
  const { server, names, ctx } = s;
  const row = await unitRow(server, names.schema, ctx.pipeline, names.targetStateKey, unitId);
  if (row?.status !== 'publishing') return row;
  return settle(s, row, names.target);
}
