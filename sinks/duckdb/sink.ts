/**
 * `duckdb` sink: rows into a DuckDB table with native STRUCT / LIST / TIMESTAMP / DATE columns, each unit's rows
 * committed in ONE transaction with its row in `_sluice_state`.
 *
 * Both paths stage the unit as a plain newline-delimited JSON file with the schema of every row (stage.ts), and
 * DuckDB loads it with `read_json` and explicit columns inside the unit's transaction (load.ts): `writeUnit` from
 * rows, `writeUnitFile` from a raw JSONL file (gzip or not) — the native path, which refuses a file that is not
 * JSONL as a whole with `NativeLoadRefused`. Before a load the table is created or evolved to fit the rows
 * (table.ts), text meeting a DATE/TIMESTAMP column decided first (temporal-text.ts). With declared columns
 * (`SinkContext.declared`, a preset's), the table is created with all of them at `open()`, or given the ones it
 * lacks, so its columns do not depend on which fields tonight's data fills; rows are then read with the table's
 * (the declared) types. The schema contract is the engine's (unit/schema-gate.ts): the sink reports the
 * columns it added or widened for a unit in the unit's `CommitResult.schemaChanges`.
 *
 * The stages, each in its file: the session (session.ts) holds the database while the sink is open; the table is
 * prepared (table-columns.ts), a unit committed (commit.ts, load.ts), the raw file loaded natively (native.ts),
 * generations replaced (replace.ts), and the attempt recorded in `_sluice_runs` (state.ts). This file is the
 * `Sink` contract wiring them.
 *
 * Concurrency: the JS work runs for as many units as the engine reads at once; loads (insert to commit, a
 * transaction each) run one at a time per database file, on one DuckDB thread (see database.ts: the
 * measurements). Native appends commit in groups (group.ts): the units on their way share one transaction, so a
 * transaction holds row groups DuckDB writes into the file as it goes instead of through its log; the engine reads
 * the next units while a group gathers (`committing`). Schema changes, merges (deletes) and the `replace` swap also
 * exclude other writers of the table, because DuckDB rejects them next to them.
 */
import path from 'node:path';
import { SluiceError } from '../../src/core/errors.js';
import type { ComponentDef, ComponentDeps } from '../../src/contracts/component.js';
import type {
  Batch,
  CommitResult,
  DuckDbOutputQuery,
  QueryableOutput,
  RawFile,
  RecordCheck,
  Sink,
  SinkCapabilities,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import { quoteIdent } from '../../src/core/sql.js';
import { declaredTypes } from '../../src/core/declared.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { displayPath } from '../../src/sink-kit/display-path.js';
import { Opened } from '../../src/sink-kit/warehouse/opened.js';
import { AttemptLoad, recordAttempt } from '../../src/sink-kit/warehouse/system-tables.js';
import { commitStaged, unitFailure, type CommitScope } from './commit.js';
import { duckdbLimits, duckdbSinkSchema, tableNames, type DuckDBSinkConfig, type TableNames } from './config.js';
import { GROUP_UNITS, UnitGroups } from './group.js';
import { commitRawFile } from './native.js';
import { BindSandbox, readOnlyQuery } from '../../src/sink-kit/duckdb-read-only.js';
import { dropNextGeneration, dropTableAndState, swapInNextGeneration } from './replace.js';
import { DuckDBSession } from './session.js';
import { discard, stageRows } from './stage.js';
import { committedCheckpoints, committedUnitIds, isUnitCommitted, recordRun, STATE_TABLE } from './state.js';
import { TableColumns } from './table-columns.js';
import { qualified, readColumns } from './table.js';

/** Test seams. */

export interface DuckDBSinkOptions {
  /** The pipeline file's directory, which `path` is relative to; describe() shows `path` as written without it. */
  baseDir?: string;
}

export class DuckDBSink implements Sink {
  readonly capabilities: SinkCapabilities;
  private readonly session = new Opened<DuckDBSession>('duckdb sink');
  private readonly names: TableNames;
  private readonly table: TableColumns;
  private readonly baseDir: string | undefined;
  /** This attempt's load, for its row in `_sluice_runs`. */
  private readonly load = new AttemptLoad();
  /** Native loads committed together (group.ts). */
  private readonly groups = new UnitGroups(() => this.scope());

  constructor(
    private readonly config: DuckDBSinkConfig,
    options: DuckDBSinkOptions = {},
  ) {
    this.names = tableNames(config);
    this.table = new TableColumns(this.names, this.label);
    this.baseDir = options.baseDir;
    this.capabilities = {
      native: {
        formats: ['jsonl'],
        load: (unit, file, commit, check, read) => this.loadFile(unit, file, commit, check, read),
        // Appends commit units in groups (group.ts); a merge deletes rows, one unit at a time.
        ...(config.write !== 'merge' && { committing: GROUP_UNITS, expecting: () => this.groups.readingOne() }),
      },
      limits: duckdbLimits(config),
    };
  }

  typeName(t: LogicalType): string {
    return duckdbType(t);
  }

  describe(): string {
    return `duckdb ${displayPath(this.config.path, this.baseDir)} table ${this.config.table}`;
  }

  outputQuery(limit: number): DuckDbOutputQuery {
    const table =
      this.config.schema === undefined
        ? quoteIdent(this.config.table)
        : qualified(this.config.schema, this.config.table);
    return {
      database: path.resolve(this.baseDir ?? '.', this.config.path),
      sql: `SELECT * FROM ${table} LIMIT ${limit}`,
      countIsCheap: true,
    };
  }

  private get label(): string {
    return `duckdb sink (${this.names.stateKey})`;
  }

  async open(ctx: SinkContext): Promise<void> {
    this.load.opened();
    const session = await DuckDBSession.open(ctx, this.config, this.names, this.label, (s) => this.session.set(s));
    await session.locked(async () => {
      if (this.config.write === 'replace' && ctx.fresh)
        await dropNextGeneration(session.conn, this.names, ctx.pipeline);
      await this.table.read(session);
      if (ctx.declared && ctx.declared.length > 0) await this.table.declare(session, declaredTypes(ctx.declared));
    });
  }

  async committedUnits(): Promise<Set<string>> {
    const { pipeline } = this.session.get().ctx;
    return this.session.get().read((conn) => committedUnitIds(conn, pipeline, this.names.targetStateKey));
  }

  async committedCheckpoints(): Promise<Map<string, unknown>> {
    const { pipeline } = this.session.get().ctx;
    return this.session.get().read((conn) => committedCheckpoints(conn, pipeline, this.names.targetStateKey));
  }

  async drop(): Promise<string[]> {
    const session = this.session.get();
    await session.locked(() => dropTableAndState(session.conn, this.names, session.ctx.pipeline));
    this.table.columns = undefined;
    return [`table ${this.names.schema}.${this.names.table}`, `its rows in ${STATE_TABLE}`];
  }

  /**
   * The columns rows are judged against: the target table's; for `replace` before its new table exists, the live
   * table's (the one the new generation takes the place of).
   */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    if (this.table.columns) return new Map(this.table.columns);
    if (this.names.target === this.names.table) return undefined;
    return this.session.get().read((conn) => readColumns(conn, this.names.schema, this.names.table));
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const staged = await stageRows(batches, await this.session.get().staging.file(unit.id));
    try {
      return await commitStaged(this.scope(), unit, staged, commit);
    } finally {
      await discard(staged);
    }
  }

  /** Native path: the unit's raw JSONL file (native.ts), committed with a group of units unless merged. */
  private loadFile(
    unit: WorkUnit,
    file: RawFile,
    commit: UnitCommit,
    check?: RecordCheck,
    read?: () => void,
  ): Promise<CommitResult> {
    const grouped = this.config.write === 'merge' ? undefined : { groups: this.groups, ...(read && { read }) };
    return commitRawFile(this.scope(), unit, file, commit, check, () => this.isCommitted(unit.id), grouped);
  }

  /** `replace`: the new table takes the old one's place, with its checkpoints, in one transaction. */
  async finish(): Promise<void> {
    if (this.config.write === 'replace') {
      const session = this.session.get();
      await session.locked(async () => {
        try {
          await swapInNextGeneration(session.conn, this.names, session.ctx.pipeline);
        } catch (err) {
          throw unitFailure(this.label, 'could not swap in the new table', err);
        }
        this.table.columns = undefined;
      });
    }
    this.load.finished = true;
  }

  /**
   * Checks after the load: a connection of their own on the sink's database (timestamps read in UTC), each query
   * bound first against an empty copy of the table in a locked-down instance, then run read-only (read-only.ts).
   */
  async queryable(): Promise<QueryableOutput> {
    const conn = await this.session.get().db.connect();
    let sandbox: BindSandbox | undefined;
    try {
      sandbox = await BindSandbox.of(conn, this.names.schema, this.names.table);
    } catch (err) {
      conn.closeSync();
      throw err;
    }
    const relation = qualified(this.names.schema, this.names.table);
    if (!sandbox) {
      conn.closeSync();
      throw new SluiceError(`${this.label}: table ${relation} does not exist: no row was ever committed to it`);
    }
    const bound = sandbox;
    return {
      dialect: 'duckdb',
      relation,
      query: async (sql) => {
        await bound.bind(sql);
        return readOnlyQuery(conn, sql);
      },
      close: async () => {
        conn.closeSync();
        await bound.close();
      },
    };
  }

  async close(): Promise<void> {
    const session = this.session.take();
    if (!session) return;
    // This attempt's row in `_sluice_runs`, if it touched the table.
    await recordAttempt(session.ctx, this.load, this.names.stateKey, this.label, (values) =>
      session.shared(() => recordRun(session.conn, values)),
    );
    await session.close();
  }

  /** A quick look before staging a unit; the transaction checks again before it commits. */
  private async isCommitted(unitId: string): Promise<boolean> {
    const { pipeline } = this.session.get().ctx;
    return this.session.get().read((conn) => isUnitCommitted(conn, pipeline, this.names.targetStateKey, unitId));
  }

  private scope(): CommitScope {
    const { config, names, label, load, table } = this;
    return { session: this.session.get(), table, config, names, label, load };
  }
}

export const duckdbSink: ComponentDef<'sink', DuckDBSinkConfig, Sink> = {
  kind: 'sink',
  type: 'duckdb',
  description: 'A DuckDB table (append, replace or merge), each unit committed in one transaction with its checkpoint.',
  schema: duckdbSinkSchema,
  create(config: DuckDBSinkConfig, deps: ComponentDeps): Sink {
    return new DuckDBSink(config, { baseDir: deps.baseDir });
  },
};
