/**
 * `clickhouse` sink: rows into a ClickHouse table through the official client (`@clickhouse/client`, HTTP), with
 * every record once as a reader sees it after a kill -9 at any moment and a rerun — without transactions, which
 * ClickHouse 18.16 does not have (later releases' are experimental, and not tested here).
 *
 * Why this protocol (unit.ts has its steps): a unit's rows go to a staging table of its own, then into the target
 * with `ALTER TABLE … ATTACH PARTITION tuple() FROM <staging>`, which moves every part of the staging table in one
 * step under the target's lock — readers see none of the unit or all of it. Its state row says `publishing` (with
 * the load's id, which every staged row carries in a hidden `_sluice_load` column) before the ATTACH and
 * `committed` after, so a crash between the two is settled by looking for the load in the target: there, the unit
 * is committed as it stands; not there, it is loaded again. The alternatives were weighed on 18.16 and dropped:
 * ReplacingMergeTree keys with a unit id and `FINAL` would make `append` tables show a re-loaded unit twice to any
 * reader that forgets FINAL, until a merge; a partition per unit (`REPLACE PARTITION` is idempotent) grows a
 * partition per unit, which MergeTree tables do not take for long; insert deduplication by block hash is for
 * Replicated tables only in 18.16 (a ZooKeeper). What a reader sees during a load: the units committed so far,
 * each whole; after a crash: the same, and after the rerun every unit once.
 *
 * `merge` is a ReplacingMergeTree ordered by the key, each row's `_sluice_version` growing within a unit and from
 * unit to unit: readers query it with `FINAL` (or `argMax`), as ClickHouse upserts are read; the staging and ATTACH
 * are the same. `replace` fills `<table>__sluice_next` and RENAMEs it into place at `finish()` (replace.ts).
 *
 * Types (types.ts): Int64, Float64, String, UInt8 for booleans, Array(Nullable(…)) for lists of scalars, and for
 * what 18.16 cannot hold faithfully — timestamps (its DateTime keeps seconds), dates before 1970, nested records —
 * text (ISO 8601, JSON) whose meaning a column COMMENT keeps. Names are case-sensitive, as in Postgres.
 *
 * The stages, each in its file: a unit staged (stage.ts) and committed (unit.ts), a crash's leftovers finished at
 * open and `sluice state drop` (recover.ts), generations replaced (replace.ts), the state and runs tables
 * (state.ts), the target's columns and DDL (table.ts, table-state.ts). This file is the `Sink` contract wiring them.
 *
 * Concurrency: the engine's units stage at once, each on its own connection; this process changes the target and
 * attaches to it one unit at a time (table-state.ts), other processes (shards) at the same time as it: a change of
 * the target between a unit's alignment and its ATTACH makes the ATTACH fail, and the unit aligns again.
 */
import type { ComponentDef, ComponentDeps } from '../../src/contracts/component.js';
import { declaredTypes } from '../../src/core/declared.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import type {
  Batch,
  CommitResult,
  OwnOutputQuery,
  QueryableOutput,
  Row,
  Sink,
  SinkCapabilities,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { Opened } from '../../src/sink-kit/warehouse/opened.js';
import { readRetrying } from '../../src/sink-kit/warehouse/failures.js';
import { AttemptLoad, recordAttempt } from '../../src/sink-kit/warehouse/system-tables.js';
import {
  DEFAULT_URL,
  clickhouseLimits,
  clickhouseSinkSchema,
  tableNames,
  type ClickHouseNames,
  type ClickHouseSinkConfig,
} from './config.js';
import {
  errorLine,
  guarded,
  openFailure,
  resolveTarget,
  Server,
  sinkFailure,
  targetText,
  type Target,
} from './connection.js';
import { dropTableAndState, recoverAtOpen } from './recover.js';
import { dropNextGeneration, swapInNextGeneration } from './replace.js';
import { committedCheckpoints, committedUnitIds, ensureSystemTables, recordRun, STATE_TABLE } from './state.js';
import { createTableSql, initialColumns, logicalColumns, readColumns } from './table.js';
import { TableState } from './table-state.js';
import { chTypeName, qualified, quoteIdent } from './types.js';
import { loadUnit, unitStatus, type UnitScope } from './unit.js';
import { clickhouseOutputReader } from './read-back.js';

export class ClickHouseSink implements Sink {
  readonly capabilities: SinkCapabilities;
  private readonly opened = new Opened<{ ctx: SinkContext; server: Server }>('clickhouse sink');
  private readonly names: ClickHouseNames;
  private readonly target: Target & { password: string };
  private readonly table: TableState;
  /** This attempt's load, for its row in `_sluice_runs`. */
  private readonly load = new AttemptLoad();

  constructor(private readonly config: ClickHouseSinkConfig) {
    this.names = tableNames(config);
    this.table = new TableState(this.names.schema, () => this.names.target);
    this.capabilities = { limits: clickhouseLimits() };
    // Resolved (and the password registered as a secret) before anything can log or fail.
    this.target = resolveTarget(config.url.trim() === '' ? DEFAULT_URL : config.url, config.database);
  }

  typeName(t: LogicalType): string {
    return chTypeName(t);
  }

  describe(): string {
    return `clickhouse ${targetText(this.target)} table ${this.names.stateKey}`;
  }

  /** `--show`, `sluice schema` and the report read the table back over a client of their own, read-only. */
  outputQuery(): OwnOutputQuery {
    const merged = this.config.write === 'merge';
    // A MergeTree counts its rows from its parts; FINAL (merge) reads every key.
    return { reader: async () => clickhouseOutputReader(this.target, this.names, merged), countIsCheap: !merged };
  }

  /** The table as a reader names it: `FINAL` for `merge` (a ReplacingMergeTree). */
  private relationSql(): string {
    const table = qualified(this.names.schema, this.names.table);
    return this.config.write === 'merge' ? `${table} FINAL` : table;
  }

  private get label(): string {
    return `clickhouse sink (${this.names.stateKey})`;
  }

  async open(ctx: SinkContext): Promise<void> {
    this.load.opened();
    const server = new Server(this.target);
    this.opened.set({ ctx, server });
    try {
      await server.exec(`CREATE DATABASE IF NOT EXISTS ${quoteIdent(this.names.schema)}`);
      await ensureSystemTables(server, this.names.schema);
    } catch (err) {
      await this.close();
      throw openFailure(this.label, this.target, err);
    }
    try {
      await recoverAtOpen(this.scope());
      if (this.config.write === 'replace' && ctx.fresh) await dropNextGeneration(server, this.names, ctx.pipeline);
      this.table.forget();
    } catch (err) {
      await this.close();
      throw sinkFailure(this.label, 'could not open the table', err);
    }
  }

  async committedUnits(): Promise<Set<string>> {
    const { server, ctx } = this.opened.get();
    return this.reading('could not read the committed units', () =>
      committedUnitIds(server, this.names.schema, ctx.pipeline, this.names.targetStateKey),
    );
  }

  /** The target's: for `replace`, the new generation's only, as every sink gives them. */
  async committedCheckpoints(): Promise<Map<string, unknown>> {
    const { server, ctx } = this.opened.get();
    return this.reading('could not read the committed checkpoints', () =>
      committedCheckpoints(server, this.names.schema, ctx.pipeline, this.names.targetStateKey),
    );
  }

  async drop(): Promise<string[]> {
    const { server, ctx } = this.opened.get();
    await guarded(this.label, 'could not drop the table', () => dropTableAndState(server, this.names, ctx.pipeline));
    this.table.forget();
    return [`table ${this.names.stateKey}`, `its rows in ${this.names.schema}.${STATE_TABLE}`];
  }

  /** The target's columns; for `replace` before its first unit, the live table's (what tonight must match). */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    const { server } = this.opened.get();
    return this.reading('could not read the table’s columns', async () => {
      const { schema, target, table } = this.names;
      const columns = (await readColumns(server, schema, target)) ?? (await readColumns(server, schema, table));
      return columns && logicalColumns(columns);
    });
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    const scope = this.scope();
    const status = await guarded(this.label, `could not check unit ${unit.id}`, () => unitStatus(scope, unit.id));
    if (status?.status === 'committed') return { committed: false, records: 0 };
    const r = await loadUnit(scope, unit, batches, commit);
    this.load.committed(r);
    return r;
  }

  async finish(): Promise<void> {
    const { server, ctx } = this.opened.get();
    const { schema, target } = this.names;
    const keys = this.config.primary_key ?? [];
    const shape = this.config.primary_key ? { keys: this.config.primary_key } : {};
    const declared = ctx.declared?.length ? initialColumns(declaredTypes(ctx.declared), new Map(), keys) : undefined;
    await guarded(this.label, 'could not finish the table', async () => {
      // Declared columns exist from the first run, even one that brought no rows.
      if (declared && this.config.write !== 'replace' && !(await readColumns(server, schema, target)))
        await server.exec(createTableSql(qualified(schema, target), declared, shape));
      if (this.config.write === 'replace') {
        await swapInNextGeneration({
          server,
          names: this.names,
          pipeline: ctx.pipeline,
          runId: ctx.runId,
          shape,
          declared,
        });
        this.table.forget();
      }
    });
    this.load.finished = true;
  }

  /** Checks after the load: read-only queries (`readonly = 1` on each) on the sink's client. */
  async queryable(): Promise<QueryableOutput> {
    const { server } = this.opened.get();
    return {
      dialect: 'clickhouse',
      relation: this.config.write === 'merge' ? `(SELECT * FROM ${this.relationSql()})` : this.relationSql(),
      query: async (sql) => server.rows<Row>(sql, { readonly: 1 }),
      close: async () => undefined,
    };
  }

  async close(): Promise<void> {
    const opened = this.opened.take();
    if (!opened) return;
    await recordAttempt(
      opened.ctx,
      this.load,
      this.names.stateKey,
      this.label,
      (values) => recordRun(opened.server, this.names.schema, values),
      errorLine,
    );
    await opened.server.close().catch(() => undefined);
  }

  /** A read outside any unit (`readRetrying`), its failure typed as `guarded` types it. */
  private reading<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return readRetrying(() => guarded(this.label, what, fn));
  }

  private scope(): UnitScope {
    const { config, names, label, table } = this;
    const { ctx, server } = this.opened.get();
    return { server, ctx, config, names, label, table };
  }
}

export const clickhouseSink: ComponentDef<'sink', ClickHouseSinkConfig, Sink> = {
  kind: 'sink',
  type: 'clickhouse',
  description:
    'A ClickHouse table (append, replace or merge) over HTTP, each unit staged and attached in one step, its checkpoint recorded beside.',
  schema: clickhouseSinkSchema,
  create(config: ClickHouseSinkConfig, _deps: ComponentDeps): Sink {
    return new ClickHouseSink(config);
  },
};
