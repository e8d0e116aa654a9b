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
 * The stages, each in its file: the table prepared (table-columns.ts, table.ts), a unit loaded (unit.ts, load.ts,
 * copy.ts), generations replaced (replace.ts), the attempt recorded in `_sluice_runs` (state.ts). This file is the
 * `Sink` contract wiring them.
 *
 * Concurrency: the engine's units load at once, each on its own pooled connection; several processes (shards) may
 * load one table at once. Unit transactions take the table's advisory lock shared, schema changes and the swap
 * exclusively, always before touching the table: they queue, never deadlock.
 */
import type pg from 'pg';
import type { ComponentDef, ComponentDeps } from '../../src/contracts/component.js';
import type {
  Batch,
  CommitResult,
  OwnOutputQuery,
  QueryableOutput,
  Sink,
  SinkCapabilities,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { Opened } from '../../src/sink-kit/warehouse/opened.js';
import { readOnlyQuery } from './read-only.js';
import { postgresOutputReader } from './read-back.js';
import { readRetrying } from '../../src/sink-kit/warehouse/failures.js';
import { AttemptLoad, recordAttempt } from '../../src/sink-kit/warehouse/system-tables.js';
import {
  connectionUrl,
  postgresLimits,
  postgresSinkSchema,
  tableNames,
  type PostgresSinkConfig,
  type TableNames,
} from './config.js';
import {
  createPool,
  errorLine,
  guarded,
  inTransaction,
  openFailure,
  resolveTarget,
  sinkFailure,
  targetText,
  type Target,
} from './connection.js';
import { SpoolPool } from './copy.js';
import { dropNextGeneration, dropTableAndState, swapInNextGeneration } from './replace.js';
import {
  committedCheckpoints,
  committedUnitIds,
  ensureSystemTables,
  isUnitCommitted,
  recordRun,
  STATE_TABLE,
} from './state.js';
import { TableColumns } from './table-columns.js';
import { lockExclusive, readColumns, schemaLockKey, tableExists } from './table.js';
import { pgType, qualified } from './types.js';
import { quoteIdent } from '../../src/core/sql.js';
import { loadRows, type UnitScope } from './unit.js';

export class PostgresSink implements Sink {
  readonly capabilities: SinkCapabilities;
  private readonly opened = new Opened<{ ctx: SinkContext; pool: pg.Pool }>('postgres sink');
  private readonly names: TableNames;
  private readonly target: Target;
  private readonly table: TableColumns;
  /** Spool files of finished units, reused by the next (copy.ts). */
  private readonly spools = new SpoolPool();
  /** This attempt's load, for its row in `_sluice_runs`. */
  private readonly load = new AttemptLoad();

  constructor(private readonly config: PostgresSinkConfig) {
    this.names = tableNames(config);
    this.table = new TableColumns(config, this.names, this.label);
    this.capabilities = { limits: postgresLimits(config) };
    // Resolved (and the password registered as a secret) before anything can log or fail.
    this.target = resolveTarget(connectionUrl(config));
  }

  typeName(t: LogicalType): string {
    return pgType(t);
  }

  describe(): string {
    return `postgres ${targetText(this.target)} table ${this.names.schema}.${this.names.table}`;
  }

  /** Read back by the sink itself (read-back.ts): DuckDB cannot reach a Postgres server here. */
  outputQuery(): OwnOutputQuery {
    return { reader: () => postgresOutputReader(this.config, this.names), countIsCheap: false };
  }

  private get label(): string {
    return `postgres sink (${this.names.stateKey})`;
  }

  async open(ctx: SinkContext): Promise<void> {
    this.load.opened();
    const pool = createPool(connectionUrl(this.config), (err) =>
      ctx.log.warn(`${this.label}: an idle connection failed: ${errorLine(err)}`),
    );
    this.opened.set({ ctx, pool });
    try {
      await inTransaction(pool, async (c) => {
        // Two processes creating the schema or the state table at once would collide in the catalog.
        await lockExclusive(c, schemaLockKey(this.names.schema));
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.names.schema)}`);
        await ensureSystemTables(c, this.names.schema);
      });
    } catch (err) {
      await this.close();
      throw openFailure(this.label, this.names.schema, this.target, err);
    }
    try {
      if (this.config.write === 'replace' && ctx.fresh) await dropNextGeneration(pool, this.names, ctx.pipeline);
      await this.table.open(pool);
    } catch (err) {
      await this.close();
      throw sinkFailure(this.label, 'could not open the table', err);
    }
  }

  async committedUnits(): Promise<Set<string>> {
    const { pool, ctx } = this.opened.get();
    return this.reading('could not read the committed units', () =>
      committedUnitIds(pool, this.names.schema, ctx.pipeline, this.names.targetStateKey),
    );
  }

  /**
   * The target's: for `replace`, the new generation's only, as every sink gives them. The live table's would let
   * an incremental source skip what it holds, and the new table that replaces it would lack those rows.
   */
  async committedCheckpoints(): Promise<Map<string, unknown>> {
    const { pool, ctx } = this.opened.get();
    return this.reading('could not read the committed checkpoints', () =>
      committedCheckpoints(pool, this.names.schema, ctx.pipeline, [this.names.targetStateKey]),
    );
  }

  async drop(): Promise<string[]> {
    const { pool, ctx } = this.opened.get();
    await dropTableAndState(pool, this.names, ctx.pipeline);
    this.table.columns = undefined;
    return [`table ${this.names.schema}.${this.names.table}`, `its rows in ${this.names.schema}.${STATE_TABLE}`];
  }

  /** The target's columns; for `replace` before its first unit, the live table's (what tonight must match). */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    const { pool } = this.opened.get();
    return this.reading('could not read the table’s columns', async () => {
      const { schema, target, table } = this.names;
      return (await readColumns(pool, schema, target)) ?? (await readColumns(pool, schema, table));
    });
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const r = await loadRows(this.scope(), unit, batches, commit);
    this.load.committed(r);
    return r;
  }

  async finish(): Promise<void> {
    const { pool, ctx } = this.opened.get();
    await guarded(this.label, 'could not finish the table', async () => {
      // Declared columns exist from the first run, even one that brought no rows.
      if (ctx.declared && !(await tableExists(pool, this.names.schema, this.names.target)))
        await this.table.prepare(pool, ctx, new Map());
      if (this.config.write === 'replace') {
        await swapInNextGeneration(pool, this.names, ctx.pipeline);
        this.table.columns = undefined;
      }
    });
    this.load.finished = true;
  }

  /** Checks after the load: read-only queries on the sink's pool (read-only.ts). */
  async queryable(): Promise<QueryableOutput> {
    const { pool } = this.opened.get();
    return {
      dialect: 'postgres',
      relation: qualified(this.names.schema, this.names.table),
      query: (sql) => readOnlyQuery(pool, sql),
      close: async () => undefined,
    };
  }

  async close(): Promise<void> {
    const opened = this.opened.take();
    if (opened)
      await recordAttempt(
        opened.ctx,
        this.load,
        this.names.stateKey,
        this.label,
        (values) => recordRun(opened.pool, this.names.schema, values),
        errorLine,
      );
    this.spools.close();
    await opened?.pool.end().catch(() => undefined);
  }

  private async isCommitted(unitId: string): Promise<boolean> {
    const { pool, ctx } = this.opened.get();
    return guarded(this.label, `could not check unit ${unitId}`, () =>
      isUnitCommitted(pool, this.names.schema, ctx.pipeline, this.names.targetStateKey, unitId),
    );
  }

  /** A read outside any unit (`readRetrying`), its failure typed as `guarded` types it. */
  private reading<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return readRetrying(() => guarded(this.label, what, fn));
  }

  private scope(): UnitScope {
    const { config, names, label, table, spools } = this;
    return { ...this.opened.get(), config, names, label, table, spools };
  }
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
