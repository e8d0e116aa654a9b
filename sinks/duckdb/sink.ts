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
 * (the declared) types. The schema contract is the engine's (engine/stages/schema-gate.ts): the sink reports the
 * columns it added or widened for a unit in the unit's `CommitResult.schemaChanges`.
 *
 * Concurrency: the JS work runs for as many units as the engine reads at once; loads (insert to commit, one
 * transaction each) run one at a time per database file, on one DuckDB thread (see database.ts: the
 * measurements); schema changes, merges (deletes) and the `replace` swap also exclude other writers of the
 * table, because DuckDB rejects them next to them.
 */
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { NativeLoadRefused, SluiceError } from '../../src/core/errors.js';
import type { ComponentDef, ComponentDeps } from '../../src/contracts/component.js';
import type {
  Batch,
  CommitResult,
  OutputQuery,
  QueryableOutput,
  Row,
  RawFile,
  RecordCheck,
  SchemaChange,
  Sink,
  SinkCapabilities,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { ConflictLog } from '../../src/schema/conflicts.js';
import { duckdbType, quoteIdent, quoteString } from '../../src/schema/duckdb-types.js';
import { declaredTypes } from '../../src/core/declared.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { RecordJudge } from '../../src/schema/storable.js';
import { displayPath } from '../display-path.js';
import { Mutex } from '../../src/core/concurrency.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../raw-jsonl/refusal.js';
import { duckdbLimits, duckdbSinkSchema, tableNames, type DuckDBSinkConfig, type TableNames } from './config.js';
import { DuckDBDatabase } from './database.js';
import { loadUnit } from './load.js';
import { checkKeysPresent } from '../../src/schema/merge-keys.js';
import { dropNextGeneration, dropTableAndState, swapInNextGeneration } from './replace.js';
import { ensureRunsTable, recordRun } from './runs-table.js';
import { discard, stageRawJsonl, stageRows, StagingDir, type StagedUnit } from './stage.js';
import { committedCheckpoints, committedUnitIds, ensureStateTable, isUnitCommitted, STATE_TABLE } from './state.js';
import { createTable, evolveTable, fitsTable, qualified, readColumns, type Columns } from './table.js';
import { fitTextToTemporal } from './temporal-text.js';

/** Test seams. */
export interface DuckDBSinkHooks {
  /** Runs inside a unit's transaction after its rows were inserted and before its `_sluice_state` row. */
  beforeCheckpoint?: (unitId: string) => void | Promise<void>;
}

export interface DuckDBSinkOptions {
  /** The pipeline file's directory, which `path` is relative to; describe() shows `path` as written without it. */
  baseDir?: string;
  hooks?: DuckDBSinkHooks;
}

export class DuckDBSink implements Sink {
  readonly capabilities: SinkCapabilities;
  private ctx: SinkContext | undefined;
  private db: DuckDBDatabase | undefined;
  private conn: DuckDBConnection | undefined;
  private readonly names: TableNames;
  private staging: StagingDir | undefined;
  /** The target table's columns; undefined while it does not exist. */
  private columns: Columns | undefined;
  /** Changes `open()` made for the declared columns: reported with the first commit. */
  private openChanges: SchemaChange[] = [];
  private readonly tableConflicts = new ConflictLog();
  private reportedConflicts = 0;
  private readConn: DuckDBConnection | undefined;
  private readonly reading = new Mutex();
  /** Connections for units' transactions, reused. */
  private readonly idle: DuckDBConnection[] = [];
  private readonly baseDir: string | undefined;
  private readonly hooks: DuckDBSinkHooks;
  /** This attempt's load, for its row in `_sluice_runs`. */
  private readonly load = { openedAt: new Date(), units: 0, records: 0, finished: false };

  constructor(
    private readonly config: DuckDBSinkConfig,
    options: DuckDBSinkOptions = {},
  ) {
    this.names = tableNames(config);
    this.baseDir = options.baseDir;
    this.hooks = options.hooks ?? {};
    this.capabilities = { nativeFormats: ['jsonl'], limits: duckdbLimits(config) };
  }

  typeName(t: LogicalType): string {
    return duckdbType(t);
  }

  describe(): string {
    return `duckdb ${displayPath(this.config.path, this.baseDir)} table ${this.config.table}`;
  }

  outputQuery(limit: number): OutputQuery {
    const table =
      this.config.schema === undefined
        ? quoteIdent(this.config.table)
        : qualified(this.config.schema, this.config.table);
    return {
      database: path.resolve(this.baseDir ?? '.', this.config.path),
      sql: `SELECT * FROM ${table} LIMIT ${limit}`,
    };
  }

  private get label(): string {
    return `duckdb sink (${this.names.stateKey})`;
  }

  async open(ctx: SinkContext): Promise<void> {
    this.ctx = ctx;
    this.load.openedAt = new Date();
    const file = path.resolve(ctx.baseDir, this.config.path);
    const db = await DuckDBDatabase.acquire(file, 'duckdb sink');
    try {
      db.claim(this.names.lockKey);
    } catch (err) {
      await db.release();
      throw err;
    }
    this.db = db;
    const conn = (this.conn = await db.connect());
    await conn.run(`SET GLOBAL memory_limit = ${quoteString(this.config.memory_limit)}`);
    this.staging = new StagingDir(`${file}.sluice-tmp`, this.names.stateKey);
    await this.staging.open(this.label);
    await db.withTable('\0shared', async () => {
      await ensureStateTable(conn);
      await ensureRunsTable(conn);
      await conn.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.names.schema)}`);
    });
    await this.locked(async () => {
      if (this.config.write === 'replace' && ctx.fresh) await dropNextGeneration(conn, this.names, ctx.pipeline);
      this.columns = await readColumns(conn, this.names.schema, this.names.target);
      if (ctx.declared && ctx.declared.length > 0) await this.declare(declaredTypes(ctx.declared));
    });
  }

  async committedUnits(): Promise<Set<string>> {
    return this.read((conn) => committedUnitIds(conn, this.context().pipeline, this.names.targetStateKey));
  }

  async committedCheckpoints(): Promise<Map<string, unknown>> {
    return this.read((conn) => committedCheckpoints(conn, this.context().pipeline, this.names.targetStateKey));
  }

  async drop(): Promise<string[]> {
    await this.locked(() => dropTableAndState(this.connection(), this.names, this.context().pipeline));
    this.columns = undefined;
    return [`table ${this.names.schema}.${this.names.table}`, `its rows in ${STATE_TABLE}`];
  }

  /**
   * The columns rows are judged against: the target table's; for `replace` before its new table exists, the live
   * table's (the one the new generation takes the place of).
   */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    if (this.columns) return new Map(this.columns);
    if (this.names.target === this.names.table) return undefined;
    return this.read((conn) => readColumns(conn, this.names.schema, this.names.table));
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const staged = await stageRows(batches, await this.stagingDir().file(unit.id));
    try {
      return await this.commitUnit(unit, staged, commit);
    } finally {
      await discard(staged);
    }
  }

  /**
   * Native path: the unit's raw JSONL file (gzip or not), checked line by line — each record judged by `check` —
   * and loaded by `read_json`. What `read_json` itself refuses in the file's text (duplicate keys in an object, which
   * JSON.parse reads as the last) refuses the file too: the engine decodes it in JS.
   */
  async writeUnitFile(unit: WorkUnit, file: RawFile, commit: UnitCommit, check?: RecordCheck): Promise<CommitResult> {
    refuseUnlessJsonl('duckdb sink', file);
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    let staged: StagedUnit;
    try {
      const judge = check ?? new RecordJudge(duckdbLimits(this.config));
      staged = await stageRawJsonl(file.path, await this.stagingDir().file(unit.id), judge);
    } catch (err) {
      throw asNativeRefusal('duckdb sink', err);
    }
    try {
      return await this.commitUnit(unit, staged, commit);
    } catch (err) {
      const text = readJsonRefusal(err);
      if (text !== undefined) throw new NativeLoadRefused('duckdb sink', text, err);
      throw err;
    } finally {
      await discard(staged);
    }
  }

  /** `replace`: the new table takes the old one's place, with its checkpoints, in one transaction. */
  async finish(): Promise<void> {
    if (this.config.write !== 'replace') {
      this.load.finished = true;
      return;
    }
    const conn = this.connection();
    await this.locked(async () => {
      try {
        await swapInNextGeneration(conn, this.names, this.context().pipeline);
      } catch (err) {
        throw this.failure('could not swap in the new table', err);
      }
      this.columns = undefined;
    });
    this.load.finished = true;
  }

  /** Checks after the load: a connection of their own on the sink's database, timestamps read in UTC. */
  async queryable(): Promise<QueryableOutput> {
    const conn = await this.database().connect();
    await conn.run(`SET SESSION TimeZone = 'UTC'`);
    return {
      dialect: 'duckdb',
      relation: qualified(this.names.schema, this.names.table),
      query: async (sql) => (await conn.runAndReadAll(sql)).getRowObjectsJson() as Row[],
      close: async () => conn.closeSync(),
    };
  }

  async close(): Promise<void> {
    await this.recordLoad();
    for (const c of this.idle.splice(0)) c.closeSync();
    this.conn?.closeSync();
    this.readConn?.closeSync();
    this.conn = undefined;
    this.readConn = undefined;
    if (this.db) {
      this.db.unclaim(this.names.lockKey);
      await this.db.release();
      this.db = undefined;
      await this.staging?.close();
    }
  }

  /** This attempt's row in `_sluice_runs`, if it touched the table; a failure to write it only warns. */
  private async recordLoad(): Promise<void> {
    const conn = this.conn;
    const ctx = this.ctx;
    if (!conn || !this.db || ctx?.runId === undefined || (this.load.units === 0 && !this.load.finished)) return;
    const runId = ctx.runId;
    try {
      await this.db.withTable('\0shared', () =>
        recordRun(conn, {
          pipeline: ctx.pipeline,
          table: this.names.stateKey,
          runId,
          complete: this.load.finished,
          units: this.load.units,
          records: this.load.records,
          startedAt: this.load.openedAt,
        }),
      );
    } catch (err) {
      ctx.log.warn(`${this.label}: could not record the run in _sluice_runs: ${(err as Error).message.split('\n')[0]}`);
    }
  }

  /** A quick look before staging a unit; the transaction checks again before it commits. */
  private async isCommitted(unitId: string): Promise<boolean> {
    return this.read((conn) => isUnitCommitted(conn, this.context().pipeline, this.names.targetStateKey, unitId));
  }

  /**
   * Reads outside the table lock go through a connection of their own, one at a time: a DuckDB connection runs
   * one statement at a time, and the main one may be inside another unit's transaction.
   */
  private async read<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.reading.run(async () => {
      this.readConn ??= await this.database().connect();
      return fn(this.readConn);
    });
  }

  private async commitUnit(unit: WorkUnit, staged: StagedUnit, commit: UnitCommit): Promise<CommitResult> {
    const unitId = unit.id;
    staged = this.withDeclared(staged);
    this.checkNames(staged.schema.conflicts);
    this.noteConflicts(staged.schema.conflicts);
    const changes: SchemaChange[] = [];
    try {
      for (;;) {
        // Decided against the table as it is now; another unit may change it before this one loads: then again.
        const incoming = await this.read((conn) => fitTextToTemporal(conn, staged, this.columns));
        const typed = incoming.size > 0;
        if (typed && !fitsTable(this.columns, incoming))
          changes.push(...(await this.locked(() => this.prepareTable(incoming))));
        if (staged.rows > 0 && this.config.primary_key) checkKeysPresent(this.config.primary_key, incoming, this.label);
        const r = await this.database().withLoadSlot(() =>
          // Appends share the table (a schema change waits for them); a merge deletes rows, so it has it alone.
          (this.config.write === 'merge' ? this.locked.bind(this) : this.shared.bind(this))(async () => {
            if (typed && !fitsTable(this.columns, incoming)) return undefined;
            const conn = this.idle.pop() ?? (await this.database().connect());
            try {
              return await loadUnit(conn, {
                pipeline: this.context().pipeline,
                names: this.names,
                unitId,
                commit,
                unit: { ...staged, columns: incoming },
                table: this.columns && new Map(this.columns),
                ...(this.config.primary_key && { primaryKey: this.config.primary_key }),
                ...(this.hooks.beforeCheckpoint && { beforeCheckpoint: this.hooks.beforeCheckpoint }),
                onNullRowsDropped: (rows) =>
                  this.context().log.warn(
                    `${this.label}: ${rows} record(s) with only null values and no table yet: not stored`,
                  ),
              });
            } finally {
              this.idle.push(conn);
            }
          }),
        );
        if (r) {
          if (r.committed) {
            this.load.units++;
            this.load.records += r.records;
            changes.unshift(...this.openChanges.splice(0));
          }
          return changes.length > 0 ? { ...r, schemaChanges: changes } : r;
        }
      }
    } catch (err) {
      throw err instanceof SluiceError ? err : this.failure(`could not load unit ${unitId}`, err);
    }
  }

  /**
   * Creates or evolves the target table so `incoming` fits; returns the changes made to an existing table (a new
   * table is no change: nothing existed).
   */
  private async prepareTable(incoming: ReadonlyMap<string, LogicalType>): Promise<SchemaChange[]> {
    const conn = this.connection();
    const log = this.context().log;
    const { schema, target } = this.names;
    if (!this.columns) {
      this.columns = await createTable(conn, schema, target, incoming);
      log.info(`${this.label}: created table ${qualified(schema, target)}`);
      return [];
    }
    if (fitsTable(this.columns, incoming)) return [];
    const evo = await evolveTable(conn, schema, target, this.columns, incoming, this.tableConflicts);
    this.columns = evo.columns;
    for (const c of evo.changes)
      log.info(
        `${this.label}: ${c.change === 'added' ? `added column ${c.column} ${c.to}` : `changed column ${c.column} from ${c.from} to ${c.to}`}`,
      );
    this.noteConflicts(this.tableConflicts);
    return evo.changes;
  }

  /**
   * A declared column the unit's rows never typed (only nulls, `[]` or `{}`) is read with its declared type all the
   * same: an empty list stays `[]`, as the row had it, instead of becoming NULL for want of a type.
   */
  private withDeclared(staged: StagedUnit): StagedUnit {
    const declared = this.context().declared;
    if (!declared || declared.every((c) => staged.columns.has(c.name))) return staged;
    const columns = new Map(staged.columns);
    for (const c of declared) if (!columns.has(c.name)) columns.set(c.name, c.type);
    return { ...staged, columns };
  }

  /** Declared columns (called under the table lock at open): the table gets every one, with its declared type. */
  private async declare(declared: ReadonlyMap<string, LogicalType>): Promise<void> {
    if (this.columns && fitsTable(this.columns, declared)) return;
    this.openChanges.push(...(await this.prepareTable(declared)));
  }

  /** DuckDB cannot hold two names that differ only in case; say which, before anything is written. */
  private checkNames(conflicts: ConflictLog): void {
    const cases = conflicts.caseConflicts();
    if (cases.length === 0) return;
    throw new SluiceError(
      `${this.label}: field names that differ only in case: ${cases.map((c) => `${c.path} (${c.seen.join(' / ')})`).join(', ')}`,
      {
        hint: 'DuckDB names ignore case: rename one of each pair with the `rename` transform, or drop it with `select`',
      },
    );
  }

  /** Logs the conflict list when it grew. */
  private noteConflicts(conflicts: ConflictLog): void {
    if (conflicts !== this.tableConflicts) this.tableConflicts.absorb(conflicts);
    if (this.tableConflicts.size > this.reportedConflicts) {
      this.reportedConflicts = this.tableConflicts.size;
      this.context().log.warn(`${this.label}: ${this.tableConflicts.format()}`);
    }
  }

  private failure(what: string, err: unknown): SluiceError {
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    return new SluiceError(`${this.label}: ${what}: ${msg}`, {
      hint: 'nothing of the unit was committed; fix the cause and run again (committed units are skipped)',
      cause: err,
    });
  }

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    return this.database().withTable(this.names.lockKey, fn);
  }

  private shared<T>(fn: () => Promise<T>): Promise<T> {
    return this.database().withTableShared(this.names.lockKey, fn);
  }

  private context(): SinkContext {
    if (!this.ctx) throw new Error('duckdb sink used before open()');
    return this.ctx;
  }

  private database(): DuckDBDatabase {
    if (!this.db) throw new Error('duckdb sink used before open()');
    return this.db;
  }

  private connection(): DuckDBConnection {
    if (!this.conn) throw new Error('duckdb sink used before open()');
    return this.conn;
  }

  private stagingDir(): StagingDir {
    if (!this.staging) throw new Error('duckdb sink used before open()');
    return this.staging;
  }
}

/**
 * `read_json`'s refusal of a raw file's text (a failure of the native load, not of the table or the database): the
 * first line of its message, or undefined for any other error.
 */
function readJsonRefusal(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const line = e.message.split('\n')[0] ?? '';
    if (/^Invalid Input Error: JSON transform error/.test(line) || /has duplicate key/.test(line))
      return `read_json refused it: ${line.replace(/^Invalid Input Error: /, '').slice(0, 300)}`;
  }
  return undefined;
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
