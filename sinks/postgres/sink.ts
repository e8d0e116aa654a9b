/**
 * `postgres` sink: rows into a PostgreSQL table, each unit's rows committed in ONE transaction with its row (and
 * checkpoint) in `_sluice_state`, so a kill -9, a dropped connection or a server restart at any moment, then a
 * rerun, gives every record exactly once.
 *
 * A unit streams: the sink reads ahead until the rows type a column, creates or evolves the table to hold them
 * (table.ts, under the table's advisory lock), and copies every batch as it arrives through `COPY … FROM STDIN`
 * in text format with backpressure (copy.ts, encode.ts), so memory stays flat whatever the unit's size: appended
 * straight into the table, or for `merge` into a temporary table that is upserted with `INSERT … ON CONFLICT`
 * (merge.ts). Each batch is typed before it is sent; one the table cannot hold (a new field, a wider type) rolls
 * the transaction back, the table is evolved, and the unit is loaded again from a spool file of the bytes already
 * sent plus the rest of the unit (load.ts). `replace` fills `<table>__sluice_next` and swaps it in at `finish()`
 * (replace.ts).
 *
 * Types (types.ts): timestamps `timestamptz`, dates `date`, lists of scalars native arrays (`text[]`, `bigint[]`),
 * structs and lists of structs `jsonb` — the reasons are in types.ts. Names are case-sensitive in Postgres (they
 * are always quoted), so fields that differ only in case are two columns here, unlike in DuckDB.
 *
 * Concurrency: the engine's units load at once, each on its own pooled connection; several processes (shards) may
 * load one table at once. Unit transactions take the table's advisory lock shared, schema changes and the swap
 * exclusively, always before touching the table: they queue, never deadlock.
 */
import type pg from 'pg';
import type { ComponentDef, ComponentDeps } from '../../src/contracts/component.js';
import { SluiceError } from '../../src/core/errors.js';
import type {
  Batch,
  CommitResult,
  OutputQuery,
  QueryableOutput,
  Row,
  SchemaChange,
  Sink,
  SinkCapabilities,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { ConflictLog } from '../../src/schema/conflicts.js';
import { declaredTypes } from '../../src/core/declared.js';
import { InferredSchema } from '../../src/schema/infer.js';
import { decidedColumns, type LogicalType } from '../../src/core/logical-type.js';
import {
  connectionUrl,
  postgresLimits,
  postgresSinkSchema,
  tableNames,
  type PostgresSinkConfig,
  type TableNames,
} from './config.js';
import {
  PostgresSinkError,
  connectFailure,
  createPool,
  errorLine,
  inTransaction,
  isTransientPgError,
  readRetrying,
  resolveTarget,
  targetText,
  type Target,
} from './connection.js';
import { SpoolPool } from './copy.js';
import { SourceFailure, loadUnit, streamUnit, type Prefix } from './load.js';
import { checkKeysPresent } from '../../src/schema/merge-keys.js';
import { dropNextGeneration, dropTableAndState, swapInNextGeneration } from './replace.js';
import { ensureRunsTable, recordLoad, type AttemptLoad } from './runs-table.js';
import { committedCheckpoints, committedUnitIds, ensureStateTable, isUnitCommitted, STATE_TABLE } from './state.js';
import {
  checkNameLengths,
  createTable,
  ensureKeyIndex,
  evolveTable,
  fitsTable,
  initialColumns,
  lockExclusive,
  lockKey,
  readColumns,
  schemaLockKey,
  tableExists,
  type Columns,
} from './table.js';
import { pgType, qualified, quoteIdent } from './types.js';

/** Test seams. */
export interface PostgresSinkHooks {
  /** Runs inside a unit's transaction after its rows went in and before its `_sluice_state` row. */
  beforeCheckpoint?: (unitId: string) => void | Promise<void>;
  /** Runs inside a unit's transaction after its `_sluice_state` row, just before COMMIT. */
  beforeCommit?: (unitId: string) => void | Promise<void>;
}

export interface PostgresSinkOptions {
  hooks?: PostgresSinkHooks;
}

/** Times a unit's load finds the table changed under it before giving up (another process keeps widening it). */
const MAX_FIT_ROUNDS = 5;

export class PostgresSink implements Sink {
  readonly capabilities: SinkCapabilities;
  private ctx: SinkContext | undefined;
  private pool: pg.Pool | undefined;
  private readonly names: TableNames;
  private readonly target: Target;
  /** The target table's columns as last seen; undefined while it does not exist. */
  private columns: Columns | undefined;
  /** Spool files of finished units, reused by the next (copy.ts). */
  private readonly spools = new SpoolPool();
  private readonly tableConflicts = new ConflictLog();
  private reportedConflicts = 0;
  private readonly hooks: PostgresSinkHooks;
  /** This attempt's load, for its row in `_sluice_runs`. */
  private readonly load: AttemptLoad = { openedAt: new Date(), units: 0, records: 0, finished: false };

  constructor(
    private readonly config: PostgresSinkConfig,
    options: PostgresSinkOptions = {},
  ) {
    this.names = tableNames(config);
    this.capabilities = { nativeFormats: [], limits: postgresLimits(config) };
    // Resolved (and the password registered as a secret) before anything can log or fail.
    this.target = resolveTarget(connectionUrl(config));
    this.hooks = options.hooks ?? {};
  }

  typeName(t: LogicalType): string {
    return pgType(t);
  }

  describe(): string {
    return `postgres ${targetText(this.target)} table ${this.names.schema}.${this.names.table}`;
  }

  /** `--show` reads through DuckDB, which cannot reach a Postgres server here: it says how to look instead. */
  outputQuery(limit: number): OutputQuery {
    const sql = `SELECT * FROM ${qualified(this.names.schema, this.names.table)} LIMIT ${limit}`;
    return { sql: `SELECT ${quoteLiteral(`read it with psql: ${sql}`)} AS postgres` };
  }

  private get label(): string {
    return `postgres sink (${this.names.stateKey})`;
  }

  async open(ctx: SinkContext): Promise<void> {
    this.ctx = ctx;
    this.load.openedAt = new Date();
    const pool = (this.pool = createPool(connectionUrl(this.config), (err) =>
      ctx.log.warn(`${this.label}: an idle connection failed: ${errorLine(err)}`),
    ));
    try {
      await inTransaction(pool, async (c) => {
        // Two processes creating the schema or the state table at once would collide in the catalog.
        await lockExclusive(c, schemaLockKey(this.names.schema));
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.names.schema)}`);
        await ensureStateTable(c, this.names.schema);
        await ensureRunsTable(c, this.names.schema);
      });
    } catch (err) {
      await this.close();
      throw this.openFailure(err);
    }
    try {
      if (this.config.write === 'replace' && ctx.fresh) await dropNextGeneration(pool, this.names, ctx.pipeline);
      this.columns = await readColumns(pool, this.names.schema, this.names.target);
      if (this.columns && this.config.primary_key) await this.ensureKey();
    } catch (err) {
      await this.close();
      throw this.failure('could not open the table', err);
    }
  }

  async committedUnits(): Promise<Set<string>> {
    return this.reading('could not read the committed units', () =>
      committedUnitIds(this.db(), this.names.schema, this.context().pipeline, this.names.targetStateKey),
    );
  }

  /**
   * The target's: for `replace`, the new generation's only, as every sink gives them. The live table's would let
   * an incremental source skip what it holds, and the new table that replaces it would lack those rows.
   */
  async committedCheckpoints(): Promise<Map<string, unknown>> {
    return this.reading('could not read the committed checkpoints', () =>
      committedCheckpoints(this.db(), this.names.schema, this.context().pipeline, [this.names.targetStateKey]),
    );
  }

  async drop(): Promise<string[]> {
    await dropTableAndState(this.db(), this.names, this.context().pipeline);
    this.columns = undefined;
    return [`table ${this.names.schema}.${this.names.table}`, `its rows in ${this.names.schema}.${STATE_TABLE}`];
  }

  /** The target's columns; for `replace` before its first unit, the live table's (what tonight must match). */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    return this.reading('could not read the table’s columns', async () => {
      const { schema, target, table } = this.names;
      return (await readColumns(this.db(), schema, target)) ?? (await readColumns(this.db(), schema, table));
    });
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    const r = await this.loadRows(unit, batches, commit);
    if (r.committed) {
      this.load.units++;
      this.load.records += r.records;
    }
    return r;
  }

  private async loadRows(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    // Objects are jsonb here whatever their fields: typing the fields would only cost time.
    const schema = new InferredSchema({ temporalText: true, objectsAsJson: true });
    const rest = batches[Symbol.asyncIterator]();
    const head: Batch[] = [];
    try {
      // Read ahead until the rows type a column: the table must exist and fit them before the COPY starts.
      for (;;) {
        const next = await rest.next();
        if (next.done) return await this.commitUnit(unit, commit, head, schema);
        schema.observe(next.value);
        head.push(next.value);
        if (decidedColumns(schema.columns).size > 0) return await this.streamUnit(unit, commit, head, rest, schema);
      }
    } catch (err) {
      // The source is left where it stopped: let it release what it holds.
      await rest.return?.().catch(() => undefined);
      throw err;
    }
  }

  async finish(): Promise<void> {
    await this.guard('could not finish the table', async () => {
      // Declared columns exist from the first run, even one that brought no rows.
      if (this.context().declared && !(await tableExists(this.db(), this.names.schema, this.names.target)))
        await this.prepareTable(new Map());
      if (this.config.write === 'replace') {
        await swapInNextGeneration(this.db(), this.names, this.context().pipeline);
        this.columns = undefined;
      }
    });
    this.load.finished = true;
  }

  /** Checks after the load: queries on the sink's pool. */
  async queryable(): Promise<QueryableOutput> {
    const pool = this.db();
    return {
      dialect: 'postgres',
      relation: qualified(this.names.schema, this.names.table),
      query: async (sql) => (await pool.query<Row>(sql)).rows,
      close: async () => undefined,
    };
  }

  async close(): Promise<void> {
    if (this.pool && this.ctx) await recordLoad(this.pool, this.names, this.ctx, this.load, this.label);
    this.spools.close();
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end().catch(() => undefined);
  }

  private async isCommitted(unitId: string): Promise<boolean> {
    return this.guard(`could not check unit ${unitId}`, () =>
      isUnitCommitted(this.db(), this.names.schema, this.context().pipeline, this.names.targetStateKey, unitId),
    );
  }

  /**
   * The unit's rows copied while they are read (load.ts `streamUnit`). When a batch needs the table changed, the
   * transaction is rolled back and the unit loaded by `commitUnit`: the rows sent so far from the spool, the rest
   * (read now, into memory) as rows.
   */
  private async streamUnit(
    unit: WorkUnit,
    commit: UnitCommit,
    head: Batch[],
    rest: AsyncIterator<Batch>,
    schema: InferredSchema,
  ): Promise<CommitResult> {
    const incoming = this.checkIncoming(schema);
    const changes: SchemaChange[] = [];
    const spool = this.spools.take();
    try {
      const r = await this.guard(`could not load unit ${unit.id}`, async () => {
        for (let round = 0; round < MAX_FIT_ROUNDS; round++) {
          if (!fitsTable(this.columns, incoming)) changes.push(...(await this.prepareTable(incoming)));
          const r = await streamUnit(this.db(), {
            ...this.loadOptions(unit, commit),
            incoming,
            head,
            rest,
            schema,
            spool,
          });
          if ('unfit' in r) {
            this.columns = r.unfit;
            continue;
          }
          return r;
        }
        throw this.keptChanging(unit);
      });
      if (!('diverged' in r)) return withChanges(r, changes);
      const remaining: Batch[] = [r.diverged.batch];
      for (let next = await rest.next(); !next.done; next = await rest.next()) {
        schema.observe(next.value);
        remaining.push(next.value);
      }
      const more = await this.commitUnit(unit, commit, remaining, schema, r.diverged.prefix);
      return withChanges(more, [...changes, ...(more.schemaChanges ?? [])]);
    } finally {
      this.spools.give(spool);
    }
  }

  /** The unit's decided columns, checked; its conflicts noted. */
  private checkIncoming(schema: InferredSchema): Map<string, LogicalType> {
    const incoming = decidedColumns(schema.columns);
    checkNameLengths(incoming.keys(), this.label);
    this.noteConflicts(schema.conflicts);
    if (schema.rows > 0 && this.config.primary_key) checkKeysPresent(this.config.primary_key, incoming, this.label);
    return incoming;
  }

  private loadOptions(unit: WorkUnit, commit: UnitCommit) {
    const ctx = this.context();
    return {
      pipeline: ctx.pipeline,
      names: this.names,
      unitId: unit.id,
      commit,
      ...(this.config.primary_key && { primaryKey: this.config.primary_key }),
      ...(this.hooks.beforeCheckpoint && { beforeCheckpoint: this.hooks.beforeCheckpoint }),
      ...(this.hooks.beforeCommit && { beforeCommit: this.hooks.beforeCommit }),
      onUnstorable: (row: Row, reason: string) => this.unstorable(unit.id, row, reason),
      onNullRowsDropped: (rows: number) =>
        ctx.log.warn(`${this.label}: ${rows} record(s) with only null values and no table yet: not stored`),
    };
  }

  private keptChanging(unit: WorkUnit): SluiceError {
    return new SluiceError(`${this.label}: the table kept changing under unit ${unit.id}`, {
      hint: 'another process keeps altering the table: run again once it is done',
    });
  }

  /** The unit's rows from memory (and `prefix`, rows an earlier attempt spooled), after the table fits them all. */
  private async commitUnit(
    unit: WorkUnit,
    commit: UnitCommit,
    batches: Batch[],
    schema: InferredSchema,
    prefix?: Prefix,
  ): Promise<CommitResult> {
    const incoming = this.checkIncoming(schema);
    const ctx = this.context();
    const changes: SchemaChange[] = [];
    return this.guard(`could not load unit ${unit.id}`, async () => {
      for (let round = 0; round < MAX_FIT_ROUNDS; round++) {
        const needsTable = incoming.size > 0 || (ctx.declared !== undefined && schema.rows > 0);
        if (needsTable && !fitsTable(this.columns, incoming)) changes.push(...(await this.prepareTable(incoming)));
        const r = await loadUnit(this.db(), {
          ...this.loadOptions(unit, commit),
          batches,
          rows: schema.rows,
          incoming,
          ...(prefix && { prefix }),
        });
        if ('unfit' in r) {
          this.columns = r.unfit;
          continue;
        }
        return withChanges(r, changes);
      }
      throw this.keptChanging(unit);
    });
  }

  /** Creates or evolves the target table so `incoming` fits; returns the changes made. */
  private async prepareTable(incoming: ReadonlyMap<string, LogicalType>): Promise<SchemaChange[]> {
    const { schema, target, table } = this.names;
    const log = this.context().log;
    const declared = this.context().declared;
    return inTransaction(this.db(), async (c) => {
      await lockExclusive(c, lockKey(schema, table));
      // Another process may have created or changed the table since this one last looked.
      const current = await readColumns(c, schema, target);
      if (!current) {
        const columns = initialColumns(declared && declaredTypes(declared), incoming);
        checkNameLengths(columns.keys(), this.label);
        await createTable(c, schema, target, columns);
        if (this.config.primary_key) await ensureKeyIndex(c, schema, target, this.config.primary_key);
        this.columns = columns;
        log.info(`${this.label}: created table ${qualified(schema, target)}`);
        return [];
      }
      const evo = await evolveTable(c, schema, target, current, incoming, this.tableConflicts);
      this.columns = evo.columns;
      for (const ch of evo.changes)
        log.info(
          `${this.label}: ${ch.change === 'added' ? `added column ${ch.column} ${ch.to}` : `changed column ${ch.column} from ${ch.from} to ${ch.to}`}`,
        );
      this.noteConflicts(this.tableConflicts);
      return evo.changes;
    });
  }

  private async ensureKey(): Promise<void> {
    const { schema, target, table } = this.names;
    await inTransaction(this.db(), async (c) => {
      await lockExclusive(c, lockKey(schema, table));
      await ensureKeyIndex(c, schema, target, this.config.primary_key!);
    });
  }

  private unstorable(unitId: string, row: Row, reason: string): void {
    let raw: string | undefined;
    try {
      // Whole: the dead-letter file cuts what is too long and says so (`truncated`), so a replay knows.
      raw = JSON.stringify(row);
    } catch {
      raw = undefined;
    }
    this.context().deadLetter({
      unit: unitId,
      stage: 'sink:postgres',
      reason,
      ...(raw !== undefined && { raw }),
    });
  }

  /** Logs the conflict list when it grew (case conflicts are none here: Postgres names are case-sensitive). */
  private noteConflicts(conflicts: ConflictLog): void {
    if (conflicts !== this.tableConflicts) this.tableConflicts.absorb(conflicts);
    const list = this.tableConflicts.list().filter((c) => c.kind !== 'case');
    if (list.length > this.reportedConflicts) {
      this.reportedConflicts = list.length;
      const lines = list.map((c) => `  - ${c.path}: seen ${c.seen.join(', ')} → ${c.resolution}`);
      this.context().log.warn(`${this.label}: schema conflicts (${lines.length}):\n${lines.join('\n')}`);
    }
  }

  /** A read outside any unit (connection.ts `readRetrying`), its failure typed as `guard` types it. */
  private reading<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return readRetrying(() => this.guard(what, fn));
  }

  /** Runs `fn`; a failure that is not already a SluiceError becomes one, transient when the server or link failed. */
  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof SourceFailure) throw err.original;
      if (err instanceof SluiceError) throw err;
      throw this.failure(what, err);
    }
  }

  private failure(what: string, err: unknown): PostgresSinkError {
    const transient = isTransientPgError(err);
    return new PostgresSinkError(`${this.label}: ${what}: ${errorLine(err)}`, {
      hint: transient
        ? 'the connection to the server failed; nothing of the unit was committed: run again (committed units are skipped)'
        : 'nothing of the unit was committed; fix the cause and run again (committed units are skipped)',
      cause: err,
      transient,
    });
  }

  private openFailure(err: unknown): SluiceError {
    const code = (err as { code?: unknown } | undefined)?.code;
    // Classes 08 (connection), 28 (authorisation), 3D (no such database), 57P03 (starting up): could not connect.
    if (typeof code === 'string' && code.length === 5 && !/^(08|28|3D|57P03)/.test(code))
      return this.failure(`could not prepare schema ${this.names.schema}`, err);
    return connectFailure(this.label, this.target, err);
  }

  private context(): SinkContext {
    if (!this.ctx) throw new Error('postgres sink used before open()');
    return this.ctx;
  }

  private db(): pg.Pool {
    if (!this.pool) throw new Error('postgres sink used before open()');
    return this.pool;
  }
}

function withChanges(r: CommitResult, changes: SchemaChange[]): CommitResult {
  const { schemaChanges: _, ...rest } = r;
  return changes.length > 0 ? { ...rest, schemaChanges: changes } : rest;
}

function quoteLiteral(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

export const postgresSink: ComponentDef<'sink', PostgresSinkConfig, Sink> = {
  kind: 'sink',
  type: 'postgres',
  description:
    'A PostgreSQL table (append, replace or merge), loaded with COPY, each unit committed in one transaction with its checkpoint.',
  schema: postgresSinkSchema,
  create(config: PostgresSinkConfig, _deps: ComponentDeps): Sink {
    return new PostgresSink(config);
  },
};
