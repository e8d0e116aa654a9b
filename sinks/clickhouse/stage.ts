/**
 * A unit's rows into its staging table, as they are read: a table of the unit's own (named after its id, so an
 * attempt after a crash finds and replaces what an earlier one left), with the target's columns, engine and key,
 * which no reader queries. Each batch is typed before it is sent; one the staging table cannot hold (a new field, a
 * wider type) ends the insert under way, the staging table is altered — it is the unit's alone, no lock, no other
 * writer — and a new insert goes on with the rest. Memory stays flat whatever the unit's size: batches are encoded
 * and streamed with backpressure (the HTTP request's body), never gathered.
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { createHash, randomBytes } from 'node:crypto';
import { declaredTypes } from '../../src/core/declared.js';
import { failpoint } from '../../src/core/failpoints.js';
import { decidedColumns, type LogicalType } from '../../src/core/logical-type.js';
import type { Batch, SinkContext, WorkUnit } from '../../src/core/types.js';
import { fitsColumns } from '../../src/schema/column-changes.js';
import { InferredSchema } from '../../src/schema/infer.js';
import { checkKeysPresent } from '../../src/schema/merge-keys.js';
import type { ClickHouseNames, ClickHouseSinkConfig } from './config.js';
import { SourceFailure, type Server } from './connection.js';
import { RowEncoder } from './encode.js';
import {
  createTableSql,
  evolveTable,
  initialColumns,
  logicalColumns,
  readColumns,
  type ChColumns,
  type TableShape,
} from './table.js';
import type { TableState } from './table-state.js';
import { chTypeName, qualified, quoteIdent } from './types.js';
import { VERSION_COLUMN } from './config.js';

/** What a unit's staging needs of its sink. */
export interface StageScope {
  server: Server;
  ctx: SinkContext;
  config: ClickHouseSinkConfig;
  names: ClickHouseNames;
  table: TableState;
  label: string;
}

export interface StagedUnit {
  /** The staging table's name (in the target's database). */
  stage: string;
  /** The id every staged row is marked with (`_sluice_load`). */
  loadId: string;
  /** Rows staged. */
  records: number;
  /** Rows of nothing but nulls that came while no table could hold them: not staged. */
  nullRowsDropped: number;
  /** The staging table exists (false: the unit brought no rows to stage). */
  staged: boolean;
  schema: InferredSchema;
}

/** The staging table's name part after the target's: a hash of the unit id (names stay short whatever the id). */
export function unitHash(unitId: string): string {
  return createHash('sha256').update(unitId).digest('hex');
}

/** A streamed insert: `write` waits while the request's body is full; a failure of the request surfaces at once. */
class InsertStream {
  private readonly body = new PassThrough();
  private readonly done: Promise<void>;
  private failure: { err: unknown } | undefined;

  constructor(server: Server, table: string, columns: readonly string[]) {
    // `abort` destroys the body with the error that stopped the unit: the request fails with it, nothing else.
    this.body.on('error', () => undefined);
    this.done = server.insert(table, columns, this.body);
    this.done.catch((err: unknown) => void (this.failure = { err }));
  }

  async write(text: string): Promise<void> {
    if (this.failure) throw this.failure.err;
    if (!this.body.write(text)) await Promise.race([once(this.body, 'drain'), this.done]);
  }

  async end(): Promise<void> {
    this.body.end();
    await this.done;
  }

  /** Cuts the request short: the server stores nothing of an insert whose body did not end. */
  async abort(err: unknown): Promise<void> {
    this.body.destroy(err instanceof Error ? err : new Error(String(err)));
    await this.done.catch(() => undefined);
  }
}

/** Stages the unit's batches; the caller attaches them (unit.ts). */
export async function stageUnit(s: StageScope, unit: WorkUnit, batches: AsyncIterable<Batch>): Promise<StagedUnit> {
  const { server, config, names } = s;
  const keys = config.primary_key ?? [];
  const stage = names.stage(unit.id, unitHash);
  const q = qualified(names.schema, stage);
  const loadId = randomBytes(12).toString('hex');
  const shape: TableShape = config.primary_key ? { keys: config.primary_key } : {};
  const schema = new InferredSchema({ temporalText: true, objectsAsJson: true });
  const declared = s.ctx.declared && s.ctx.declared.length > 0 ? declaredTypes(s.ctx.declared) : undefined;
  // An earlier attempt's, or a crashed run's: this attempt stages from scratch.
  await server.exec(`DROP TABLE IF EXISTS ${q}`);

  let columns: ChColumns | undefined;
  let logical: Map<string, LogicalType> | undefined;
  let insert: InsertStream | undefined;
  let encoder: RowEncoder | undefined;
  const head: Batch[] = [];
  let records = 0;
  let sent = 0;
  // `merge`: later rows of a unit are newer versions of a key; the unit's rows are newer than what came before.
  const versionBase = BigInt(Date.now()) << 22n;
  const version = config.primary_key ? (ordinal: number) => String(versionBase + BigInt(ordinal)) : undefined;

  const create = async (incoming: ReadonlyMap<string, LogicalType>): Promise<void> => {
    const target = await s.table.current(server);
    const initial = target ? new Map(target) : initialColumns(declared, incoming, keys);
    await server.exec(createTableSql(q, initial, shape, loadId));
    columns = initial;
    if (target) await widenStage(incoming);
    logical = logicalColumns(columns);
  };
  const widenStage = async (incoming: ReadonlyMap<string, LogicalType>): Promise<void> => {
    await evolveTable(server, q, columns!, incoming, s.table.conflicts.all, keys);
    columns = (await readColumns(server, names.schema, stage))!;
    logical = logicalColumns(columns);
  };
  const send = async (batch: Batch): Promise<void> => {
    if (!insert) {
      const cols = [...columns!.keys()];
      encoder = new RowEncoder(cols, columns!, version);
      insert = new InsertStream(server, q, [...cols.map(quoteIdent), ...(version ? [quoteIdent(VERSION_COLUMN)] : [])]);
    }
    const text = encoder!.batch(batch, records);
    records += batch.length;
    await insert.write(text);
    sent += text.length;
    failpoint('clickhouse:mid-insert', sent);
  };

  const rest = batches[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<Batch>;
      try {
        next = await rest.next();
      } catch (err) {
        throw new SourceFailure(err);
      }
      if (next.done) break;
      schema.observe(next.value);
      const incoming = decidedColumns(schema.columns);
      if (!columns) {
        // Rows of nothing but nulls type nothing: held until a row types a column (or the target says).
        if (incoming.size === 0 && !declared && !(await s.table.current(server))) {
          head.push(next.value);
          continue;
        }
        if (keys.length > 0) checkKeysPresent(keys, incoming, s.label);
        await create(incoming);
      } else if (!fitsColumns(logical, incoming, chTypeName)) {
        // The insert under way holds what was sent; the rest goes in a new one once the table fits it.
        await insert?.end();
        insert = undefined;
        await widenStage(incoming);
      }
      for (const batch of head.splice(0)) await send(batch);
      await send(next.value);
    }
    await insert?.end();
  } catch (err) {
    await rest.return?.().catch(() => undefined);
    await insert?.abort(err);
    // Nothing of it is visible; a unit that is never tried again must not leave its table behind either.
    if (columns) await server.exec(`DROP TABLE IF EXISTS ${q}`).catch(() => undefined);
    throw err;
  }
  if (schema.rows > 0 && keys.length > 0) checkKeysPresent(keys, decidedColumns(schema.columns), s.label);
  return { stage, loadId, records, nullRowsDropped: head.reduce((n, b) => n + b.length, 0), staged: !!columns, schema };
}
