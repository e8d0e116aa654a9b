/**
 * Load a unit: read ahead until the rows type a column, prepare the table (table-columns.ts), then stream every
 * batch through COPY as it arrives (load.ts `streamUnit`); a batch the table cannot hold rolls the transaction back
 * and the unit is loaded again from memory and the spool of what was sent (load.ts `commitUnitRows`). A table changed
 * under the load by another process is read again, up to `MAX_FIT_ROUNDS` times.
 */
import type pg from 'pg';
import { decidedColumns } from '../../src/core/logical-type.js';
import type {
  Batch,
  CommitResult,
  Row,
  SchemaChange,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { InferredSchema } from '../../src/schema/infer.js';
import {
  keptChanging,
  MAX_FIT_ROUNDS,
  nullRowsDropped,
  withChanges,
} from '../../src/sink-kit/warehouse/unit-result.js';
import type { PostgresSinkConfig, TableNames } from './config.js';
import { guarded } from './connection.js';
import type { SpoolPool } from './copy.js';
import { commitUnitRows, streamUnit, type Prefix } from './load.js';
import type { TableColumns } from './table-columns.js';

/** Times a unit's load finds the table changed under it before giving up (another process keeps widening it). */
/** What a unit's load needs of its sink. */
export interface UnitScope {
  pool: pg.Pool;
  ctx: SinkContext;
  table: TableColumns;
  config: PostgresSinkConfig;
  names: TableNames;
  label: string;
  /** Spool files of finished units, reused by the next (copy.ts). */
  spools: SpoolPool;
}

/** The unit's rows, committed with its checkpoint (the caller checked it is not committed yet). */
export async function loadRows(
  s: UnitScope,
  unit: WorkUnit,
  batches: AsyncIterable<Batch>,
  commit: UnitCommit,
): Promise<CommitResult> {
  // Objects are jsonb here whatever their fields: typing the fields would only cost time.
  const schema = new InferredSchema({ temporalText: true, objectsAsJson: true });
  const rest = batches[Symbol.asyncIterator]();
  const head: Batch[] = [];
  try {
    // Read ahead until the rows type a column: the table must exist and fit them before the COPY starts.
    for (;;) {
      const next = await rest.next();
      if (next.done) return await commitFromMemory(s, unit, commit, head, schema);
      schema.observe(next.value);
      head.push(next.value);
      if (decidedColumns(schema.columns).size > 0) return await stream(s, unit, commit, head, rest, schema);
    }
  } catch (err) {
    // The source is left where it stopped: let it release what it holds.
    await rest.return?.().catch(() => undefined);
    throw err;
  }
}

/**
 * The unit's rows copied while they are read. When a batch needs the table changed, the transaction is rolled back
 * and the unit loaded by `commitFromMemory`: the rows sent so far from the spool, the rest (read now) as rows.
 */
async function stream(
  s: UnitScope,
  unit: WorkUnit,
  commit: UnitCommit,
  head: Batch[],
  rest: AsyncIterator<Batch>,
  schema: InferredSchema,
): Promise<CommitResult> {
  const incoming = s.table.incoming(s.ctx, schema);
  const changes: SchemaChange[] = [];
  const spool = s.spools.take();
  try {
    const r = await guarded(s.label, `could not load unit ${unit.id}`, async () => {
      for (let round = 0; round < MAX_FIT_ROUNDS; round++) {
        if (!s.table.fits(incoming)) changes.push(...(await s.table.prepare(s.pool, s.ctx, incoming)));
        const r = await streamUnit(s.pool, { ...loadOptions(s, unit, commit), incoming, head, rest, schema, spool });
        if ('unfit' in r) {
          s.table.columns = r.unfit;
          continue;
        }
        return r;
      }
      throw keptChanging(s.label, unit.id);
    });
    if (!('diverged' in r)) return withChanges(r, changes);
    const remaining: Batch[] = [r.diverged.batch];
    for (let next = await rest.next(); !next.done; next = await rest.next()) {
      schema.observe(next.value);
      remaining.push(next.value);
    }
    const more = await commitFromMemory(s, unit, commit, remaining, schema, r.diverged.prefix);
    return withChanges(more, [...changes, ...(more.schemaChanges ?? [])]);
  } finally {
    s.spools.give(spool);
  }
}

/** The unit's rows from memory (and `prefix`, rows an earlier attempt spooled), after the table fits them all. */
async function commitFromMemory(
  s: UnitScope,
  unit: WorkUnit,
  commit: UnitCommit,
  batches: Batch[],
  schema: InferredSchema,
  prefix?: Prefix,
): Promise<CommitResult> {
  const incoming = s.table.incoming(s.ctx, schema);
  const changes: SchemaChange[] = [];
  return guarded(s.label, `could not load unit ${unit.id}`, async () => {
    for (let round = 0; round < MAX_FIT_ROUNDS; round++) {
      const needsTable = incoming.size > 0 || (s.ctx.declared !== undefined && schema.rows > 0);
      if (needsTable && !s.table.fits(incoming)) changes.push(...(await s.table.prepare(s.pool, s.ctx, incoming)));
      const r = await commitUnitRows(s.pool, {
        ...loadOptions(s, unit, commit),
        batches,
        rows: schema.rows,
        incoming,
        ...(prefix && { prefix }),
      });
      if ('unfit' in r) {
        s.table.columns = r.unfit;
        continue;
      }
      return withChanges(r, changes);
    }
    throw keptChanging(s.label, unit.id);
  });
}

function loadOptions(s: UnitScope, unit: WorkUnit, commit: UnitCommit) {
  const { config, ctx, label } = s;
  return {
    pipeline: ctx.pipeline,
    names: s.names,
    unitId: unit.id,
    commit,
    ...(config.primary_key && { primaryKey: config.primary_key }),
    onUnstorable: (row: Row, reason: string) => unstorable(ctx, unit.id, row, reason),
    onNullRowsDropped: (rows: number) => ctx.log.warn(nullRowsDropped(label, rows)),
  };
}

/** A row the table cannot hold, to the dead letters with the reason. */
function unstorable(ctx: SinkContext, unitId: string, row: Row, reason: string): void {
  let raw: string | undefined;
  try {
    // Whole: the dead-letter file cuts what is too long and says so (`truncated`), so a replay knows.
    raw = JSON.stringify(row);
  } catch {
    raw = undefined;
  }
  ctx.deadLetter({ unit: unitId, stage: 'sink:postgres', reason, ...(raw !== undefined && { raw }) });
}
