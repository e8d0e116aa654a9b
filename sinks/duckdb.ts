/**
 * `duckdb` sink: rows into a DuckDB table with native STRUCT / LIST / TIMESTAMP / DATE columns, each unit's rows
 * committed in ONE transaction with its row in `_sluice_state`.
 *
 * Rows from JS are written to a staging NDJSON file (observing the schema on the way) and loaded with DuckDB's
 * own `read_json(columns = …)`: measured faster and leaner than the appender (see `bench/sinks.ts`). A unit that
 * arrives as a local JSONL file is loaded by `read_json` directly. Staging runs concurrently for many units;
 * what touches the table (schema changes, the load, the checkpoint) runs one unit at a time per table, because
 * DuckDB rejects concurrent schema changes and conflicting deletes on one table.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import pLimit from 'p-limit';
import { z } from 'zod';
import { SluiceError } from '../src/core/errors.js';
import type {
  Batch,
  CommitResult,
  ComponentDef,
  ComponentDeps,
  RawFile,
  Sink,
  SinkContext,
  WorkUnit,
} from '../src/core/types.js';
import { ConflictLog } from '../src/schema/conflicts.js';
import { duckdbType, fromDuckDBType, quoteIdent, quoteString } from '../src/schema/duckdb-types.js';
import { InferredSchema } from '../src/schema/infer.js';
import { caseTwin } from '../src/schema/join.js';
import type { LogicalType } from '../src/schema/logical-type.js';
import { DuckDBDatabase } from './common/duckdb-database.js';
import {
  committedUnitIds,
  deleteStateRows,
  ensureStateTable,
  insertStateRow,
  isUnitCommitted,
  moveStateRows,
} from './common/duckdb-state.js';
import {
  convertExpr,
  createTable,
  evolveTable,
  qualified,
  readColumns,
  tableExists,
  type Columns,
} from './common/duckdb-table.js';
import { ensureWritableDir } from './common/fs-durable.js';
import { isGzipFile } from './common/jsonl-copy.js';
import { writeNdjson } from './common/ndjson-writer.js';
import { unitFileStem } from './common/unit-file-name.js';

/**
 * Units staged into DuckDB at once. DuckDB already uses every core for one load, and each staged unit holds its
 * rows in memory until committed: two keep both cores busy (one parsing while the other commits) at half the
 * memory of four.
 */
const STAGE_CONCURRENCY = Number(process.env.SLUICE_DUCKDB_STAGE_CONCURRENCY ?? 2);

/** Suffix of the table a `replace` run fills before it is swapped in. */
export const NEXT_SUFFIX = '__sluice_next';

export const duckdbSinkSchema = z
  .object({
    type: z.literal('duckdb'),
    path: z
      .string()
      .min(1)
      .describe(
        'DuckDB database file, relative to the pipeline file; created if missing. Several sinks may share one file, each with its own table.',
      ),
    table: z
      .string()
      .min(1)
      .describe(
        'Table to write. Created from the data on first write with native STRUCT/LIST/TIMESTAMP/DATE columns; new fields become new columns and widened types are altered in place.',
      ),
    schema: z
      .string()
      .min(1)
      .optional()
      .describe('DuckDB schema (namespace) of the table; created if missing. Default `main`.'),
    write: z
      .enum(['append', 'replace', 'merge'])
      .default('append')
      .describe(
        '`append`: add the rows. `replace`: the run fills a new table that replaces the old one in one transaction when the run finishes (readers see the old table or the complete new one; a failed run leaves the old one). `merge`: upsert on `primary_key` — a row whose key exists replaces the stored row; within one unit the last row for a key wins.',
      ),
    primary_key: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Column(s) identifying a row, for `write: merge` (required there, not allowed otherwise).'),
    memory_limit: z
      .string()
      .regex(/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, 'a size such as 512MB or 2GB')
      .optional()
      .describe(
        "DuckDB's memory limit for the database file (e.g. `1GB`); DuckDB spills to disk beyond it. Default: DuckDB's (80% of RAM).",
      ),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.write === 'merge' && !c.primary_key)
      ctx.addIssue({
        code: 'custom',
        path: ['primary_key'],
        message: '`write: merge` needs `primary_key`: the column(s) that identify a row, e.g. `primary_key: [id]`',
      });
    if (c.write !== 'merge' && c.primary_key)
      ctx.addIssue({
        code: 'custom',
        path: ['primary_key'],
        message: '`primary_key` is only used with `write: merge`: remove it, or set `write: merge`',
      });
  });

export type DuckDBSinkConfig = z.infer<typeof duckdbSinkSchema>;

/** Test seams. */
export interface DuckDBSinkHooks {
  /** Runs inside a unit's transaction after its rows were inserted and before its `_sluice_state` row. */
  beforeCheckpoint?: (unitId: string) => void | Promise<void>;
}

/**
 * A unit's rows loaded into a temp table of the connection that will commit them. Staging runs for many units in
 * parallel (each on a connection of its own); only the short copy into the table and the checkpoint are serialised.
 */
interface Stage {
  conn: DuckDBConnection;
  /** Quoted name of the temp table. */
  table: string;
  /** Column types of the staged rows (what they are, before conversion to the table's types). */
  columns: ReadonlyMap<string, LogicalType>;
  rows: number;
}

export class DuckDBSink implements Sink {
  private ctx: SinkContext | undefined;
  private db: DuckDBDatabase | undefined;
  private conn: DuckDBConnection | undefined;
  private readonly schemaName: string;
  /** Table rows go to: the table itself, or for `replace` the next generation. */
  private readonly target: string;
  /** `_sluice_state.table_name` of the table and of its next generation. */
  private readonly stateKey: string;
  private readonly targetStateKey: string;
  private stagingDir = '';
  private stagingPrefix = '';
  /** The target table's columns; undefined while it does not exist. */
  private columns: Columns | undefined;
  private readonly tableConflicts = new ConflictLog();
  private reportedConflicts = 0;
  /** Connections of units in flight (a temp table belongs to one connection); reused across units. */
  private readonly idle: DuckDBConnection[] = [];
  private stageCounter = 0;
  private readonly stageSlots = pLimit(Math.max(1, STAGE_CONCURRENCY));

  constructor(
    private readonly config: DuckDBSinkConfig,
    private readonly hooks: DuckDBSinkHooks = {},
  ) {
    if (config.write === 'merge' && !config.primary_key)
      throw new SluiceError('duckdb sink: `write: merge` needs `primary_key`', {
        hint: 'add `primary_key: [<column>, …]`: the column(s) that identify a row',
      });
    this.schemaName = config.schema ?? 'main';
    this.target = config.write === 'replace' ? `${config.table}${NEXT_SUFFIX}` : config.table;
    this.stateKey = this.schemaName === 'main' ? config.table : `${this.schemaName}.${config.table}`;
    this.targetStateKey = config.write === 'replace' ? `${this.stateKey}${NEXT_SUFFIX}` : this.stateKey;
  }

  private get label(): string {
    return `duckdb sink (${this.stateKey})`;
  }

  async open(ctx: SinkContext): Promise<void> {
    this.ctx = ctx;
    const file = path.resolve(ctx.baseDir, this.config.path);
    const db = await DuckDBDatabase.acquire(file, 'duckdb sink');
    try {
      db.claim(this.lockKey());
    } catch (err) {
      await db.release();
      throw err;
    }
    this.db = db;
    this.conn = await db.connect();
    if (this.config.memory_limit) await this.conn.run(`SET GLOBAL memory_limit = ${quoteString(this.config.memory_limit)}`);
    // Staging files live beside the database (DuckDB's own temp directory is `<file>.tmp`).
    this.stagingDir = `${file}.sluice-tmp`;
    this.stagingPrefix = `${unitFileStem(this.stateKey)}.`;
    await ensureWritableDir(this.stagingDir, this.label);
    // Nothing else can be staging for this table: DuckDB lets one process write the file, and `claim` one sink.
    for (const name of await readdir(this.stagingDir))
      if (name.startsWith(this.stagingPrefix)) await rm(path.join(this.stagingDir, name), { force: true });

    const conn = this.conn;
    await db.withTable('\0shared', async () => {
      await ensureStateTable(conn);
      await conn.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.schemaName)}`);
    });
    await this.locked(async () => {
      if (this.config.write === 'replace' && ctx.fresh) {
        await conn.run('BEGIN TRANSACTION');
        await conn.run(`DROP TABLE IF EXISTS ${qualified(this.schemaName, this.target)}`);
        await deleteStateRows(conn, ctx.pipeline, this.targetStateKey);
        await conn.run('COMMIT');
      }
      this.columns = await readColumns(conn, this.schemaName, this.target);
    });
  }

  async committedUnits(): Promise<Set<string>> {
    return committedUnitIds(this.connection(), this.context().pipeline, this.targetStateKey);
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>): Promise<CommitResult> {
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const staging = path.join(
      this.stagingDir,
      `${this.stagingPrefix}${unitFileStem(unit.id)}.${randomBytes(4).toString('hex')}.json`,
    );
    const schema = new InferredSchema();
    try {
      const { rows } = await writeNdjson(batches, staging, { schema });
      this.checkNames(schema.conflicts);
      this.noteConflicts(schema.conflicts);
      const specs = [...schema.columns].map(([k, t]) => `${quoteString(k)}: ${quoteString(duckdbType(t))}`);
      const source = `read_json(${quoteString(staging)}, format = 'newline_delimited', columns = {${specs.join(', ')}})`;
      return await this.stageAndCommit(unit.id, rows > 0 ? source : undefined, schema.columns);
    } finally {
      await rm(staging, { force: true });
    }
  }

  /**
   * Native path: DuckDB reads the unit's file itself (`read_json` detects the columns), the table is created or
   * evolved to hold them, and the rows are copied in the unit's transaction. Throws when DuckDB refuses the file.
   */
  async writeUnitFile(unit: WorkUnit, file: RawFile): Promise<CommitResult> {
    if (file.format !== 'jsonl') throw new Error(`the duckdb sink loads only JSONL files natively, not ${file.format}`);
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const compression = (await isGzipFile(file.path)) ? 'gzip' : 'uncompressed';
    return this.stageAndCommit(
      unit.id,
      `read_json(${quoteString(file.path)}, format = 'newline_delimited', compression = ${quoteString(compression)}, map_inference_threshold = -1)`,
    );
  }

  /** Stages `source` (no rows when undefined) on a connection of its own, then commits it under the table lock. */
  private stageAndCommit(
    unitId: string,
    source: string | undefined,
    columns?: ReadonlyMap<string, LogicalType>,
  ): Promise<CommitResult> {
    return this.stageSlots(async () => {
      const conn = await this.takeConnection();
      let stage: Stage | undefined;
      try {
        if (source) stage = await this.stage(conn, source, columns);
        return await this.commitUnit(unitId, conn, stage);
      } finally {
        await this.dropStage(stage);
        this.giveConnection(conn);
      }
    });
  }

  /** `replace`: the new table takes the old one's place, with its checkpoints, in one transaction. */
  async finish(): Promise<void> {
    if (this.config.write !== 'replace') return;
    const conn = this.connection();
    const pipeline = this.context().pipeline;
    await this.locked(async () => {
      const final = qualified(this.schemaName, this.config.table);
      await conn.run('BEGIN TRANSACTION');
      try {
        if (await tableExists(conn, this.schemaName, this.target)) {
          await conn.run(`DROP TABLE IF EXISTS ${final}`);
          await conn.run(
            `ALTER TABLE ${qualified(this.schemaName, this.target)} RENAME TO ${quoteIdent(this.config.table)}`,
          );
        } else if (await tableExists(conn, this.schemaName, this.config.table)) {
          // The run wrote no rows: the replacement is an empty table.
          await conn.run(`DELETE FROM ${final}`);
        }
        await deleteStateRows(conn, pipeline, this.stateKey);
        await moveStateRows(conn, pipeline, this.targetStateKey, this.stateKey);
        await conn.run('COMMIT');
      } catch (err) {
        await rollback(conn);
        throw this.failure('could not swap in the new table', err);
      }
      this.columns = undefined;
    });
  }

  async close(): Promise<void> {
    for (const c of this.idle.splice(0)) c.closeSync();
    this.conn?.closeSync();
    this.conn = undefined;
    if (this.db) {
      this.db.unclaim(this.lockKey());
      await this.db.release();
      this.db = undefined;
    }
  }

  private async isCommitted(unitId: string): Promise<boolean> {
    return isUnitCommitted(this.connection(), this.context().pipeline, this.targetStateKey, unitId);
  }

  /** Loads `source` into a new temp table of `conn`; `columns` are the rows' types when known, else DuckDB's. */
  private async stage(
    conn: DuckDBConnection,
    source: string,
    columns?: ReadonlyMap<string, LogicalType>,
  ): Promise<Stage> {
    const table = `temp.${quoteIdent(`_sluice_stage_${++this.stageCounter}`)}`;
    await conn.run(`CREATE TEMP TABLE ${table.slice(5)} AS SELECT * FROM ${source}`);
    const stage: Stage = { conn, table, columns: columns ?? new Map(), rows: 0 };
    const count = await conn.runAndReadAll(`SELECT count(*) FROM ${table}`);
    stage.rows = Number(count.getRows()[0]![0]);
    if (!columns) {
      const r = await conn.runAndReadAll(`SELECT * FROM ${table} LIMIT 0`);
      const detected = new Map<string, LogicalType>();
      const types = r.columnTypes();
      r.columnNames().forEach((n, i) => {
        const twin = caseTwin(detected, n);
        if (twin !== undefined) throw new Error(`fields ${twin} and ${n} differ only in case`);
        detected.set(n, fromDuckDBType(types[i]!));
      });
      stage.columns = detected;
    }
    return stage;
  }

  private async dropStage(stage: Stage | undefined): Promise<void> {
    if (stage) await stage.conn.run(`DROP TABLE IF EXISTS ${stage.table}`).catch(() => undefined);
  }

  private async commitUnit(unitId: string, conn: DuckDBConnection, stage: Stage | undefined): Promise<CommitResult> {
    return this.locked(async () => {
      // First try keeping DATE/TIMESTAMP columns for ISO text (DuckDB parses it); widen to VARCHAR only if refused.
      for (let lenient = true; ; lenient = false) {
        const columns = stage && stage.rows > 0 ? await this.prepareTable(stage.columns, lenient) : undefined;
        try {
          return await this.transaction(unitId, conn, stage, columns);
        } catch (err) {
          if (lenient && isConversionError(err)) continue;
          throw err instanceof SluiceError ? err : this.failure(`could not load unit ${unitId}`, err);
        }
      }
    });
  }

  /** Creates or evolves the target table so `incoming` fits; returns its columns. */
  private async prepareTable(incoming: ReadonlyMap<string, LogicalType>, lenient: boolean): Promise<Columns> {
    const conn = this.connection();
    const log = this.context().log;
    if (!this.columns) {
      this.columns = await createTable(conn, this.schemaName, this.target, incoming);
      log.info(`${this.label}: created table ${qualified(this.schemaName, this.target)}`);
    } else {
      const evo = await evolveTable(conn, this.schemaName, this.target, this.columns, incoming, this.tableConflicts, {
        textIntoTemporal: lenient,
      });
      this.columns = evo.columns;
      for (const c of evo.changes) log.info(`${this.label}: ${c}`);
      this.noteConflicts(this.tableConflicts);
    }
    for (const k of this.config.primary_key ?? []) {
      if (!incoming.has(k))
        throw new SluiceError(`${this.label}: primary key column "${k}" is not in the data`, {
          hint: `every row needs the key for \`write: merge\`: fix \`primary_key\` (the data has ${[...incoming.keys()].slice(0, 12).join(', ')}), or add the field with a transform`,
        });
    }
    return this.columns;
  }

  private async transaction(
    unitId: string,
    conn: DuckDBConnection,
    stage: Stage | undefined,
    columns: Columns | undefined,
  ): Promise<CommitResult> {
    const pipeline = this.context().pipeline;
    await conn.run('BEGIN TRANSACTION');
    try {
      if (await isUnitCommitted(conn, pipeline, this.targetStateKey, unitId)) {
        await rollback(conn);
        return { committed: false, records: 0 };
      }
      if (stage && columns) await this.insertRows(stage, columns);
      const records = stage?.rows ?? 0;
      await this.hooks.beforeCheckpoint?.(unitId);
      await insertStateRow(conn, pipeline, this.targetStateKey, unitId, records);
      await conn.run('COMMIT');
      return { committed: true, records };
    } catch (err) {
      await rollback(conn);
      throw err;
    }
  }

  /** The unit's data statement(s): staged rows, converted to the table's types, appended or merged. */
  private async insertRows(stage: Stage, columns: Columns): Promise<void> {
    const table = qualified(this.schemaName, this.target);
    const convert = (k: string): string =>
      convertExpr(`s.${quoteIdent(k)}`, stage.columns.get(k)!, columns.get(k)!, 0);
    const list = [...stage.columns.keys()].map((k) => `${convert(k)} AS ${quoteIdent(k)}`).join(', ');
    if (this.config.write !== 'merge') {
      await stage.conn.run(`INSERT INTO ${table} BY NAME SELECT ${list} FROM ${stage.table} AS s`);
      return;
    }
    const keys = this.config.primary_key!;
    await stage.conn.run(
      `DELETE FROM ${table} AS t USING ${stage.table} AS s WHERE ${keys.map((k) => `t.${quoteIdent(k)} IS NOT DISTINCT FROM ${convert(k)}`).join(' AND ')}`,
    );
    // The temp table keeps the unit's row order in its rowid: the last row for a key wins.
    await stage.conn.run(
      `INSERT INTO ${table} BY NAME SELECT ${list} FROM ${stage.table} AS s QUALIFY row_number() OVER (PARTITION BY ${keys.map((k) => `s.${quoteIdent(k)}`).join(', ')} ORDER BY s.rowid DESC) = 1`,
    );
  }

  private async takeConnection(): Promise<DuckDBConnection> {
    return this.idle.pop() ?? (await this.database().connect());
  }

  private giveConnection(conn: DuckDBConnection): void {
    if (this.conn) this.idle.push(conn);
    else conn.closeSync();
  }

  /** DuckDB cannot hold two names that differ only in case; say which, before anything is written. */
  private checkNames(conflicts: ConflictLog): void {
    const cases = conflicts.caseConflicts();
    if (cases.length === 0) return;
    throw new SluiceError(
      `${this.label}: field names that differ only in case: ${cases.map((c) => `${c.path} (${c.seen.join(' / ')})`).join(', ')}`,
      { hint: 'DuckDB names ignore case: rename one of each pair with the `rename` transform, or drop it with `select`' },
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
    return this.database().withTable(this.lockKey(), fn);
  }

  private lockKey(): string {
    return `${this.schemaName}.${this.config.table}`;
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
}

function isConversionError(err: unknown): boolean {
  return err instanceof Error && /conver/i.test(err.message);
}

async function rollback(conn: DuckDBConnection): Promise<void> {
  try {
    await conn.run('ROLLBACK');
  } catch {
    // No transaction left to roll back (a failed COMMIT already ended it).
  }
}

export function createDuckDBSink(config: DuckDBSinkConfig, hooks: DuckDBSinkHooks = {}): DuckDBSink {
  return new DuckDBSink(config, hooks);
}

export const duckdbSink: ComponentDef<'sink', DuckDBSinkConfig, Sink> = {
  kind: 'sink',
  type: 'duckdb',
  description: 'A DuckDB table (append, replace or merge), each unit committed in one transaction with its checkpoint.',
  schema: duckdbSinkSchema,
  create(config: DuckDBSinkConfig, _deps: ComponentDeps): Sink {
    return new DuckDBSink(config);
  },
};
