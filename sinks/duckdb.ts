/**
 * `duckdb` sink: rows into a DuckDB table with native STRUCT / LIST / TIMESTAMP / DATE columns, each unit's rows
 * committed in ONE transaction with its row in `_sluice_state`.
 *
 * Both paths give DuckDB a newline-delimited JSON file and its schema, and DuckDB loads it with `read_json` and
 * explicit `columns` (the table's types) inside the unit's transaction:
 * - `writeUnit` (rows from JS): the rows are written to a staging file, the schema inferred on the way —
 *   measured faster than the appender, row by row or in columnar DataChunks (`bench/sinks.ts`);
 * - `writeUnitFile` (a local JSONL file, gzip or not): one JS pass (common/duckdb-stage.ts) checks every line,
 *   learns the schema from every row — the only proof that `read_json` with explicit columns drops no key and
 *   narrows no value — and decompresses gzip into a staging file, so DuckDB reads plain text. Letting DuckDB
 *   detect the columns from a sample instead is not safe: beyond the sample it rounds 1.5 into a BIGINT column
 *   and reads 3 as `true` in a BOOLEAN one, silently.
 * Concurrency: the JS work runs for as many units as the engine reads at once; loads (insert to commit, one
 * transaction each) run one at a time per database file, on one DuckDB thread (see duckdb-database.ts: the
 * measurements); schema changes, merges (deletes) and the `replace` swap also exclude other writers of the
 * table, because DuckDB rejects them next to them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { SluiceError } from '../src/core/errors.js';
import { failpoint } from '../src/core/failpoints.js';
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
import { duckdbType, quoteIdent, quoteString } from '../src/schema/duckdb-types.js';
import { InferredSchema } from '../src/schema/infer.js';
import { joinTypes } from '../src/schema/join.js';
import { decidedColumns, type LogicalType } from '../src/schema/logical-type.js';
import { DuckDBDatabase } from './common/duckdb-database.js';
import {
  committedUnitIds,
  deleteStateRows,
  ensureStateTable,
  insertStateRow,
  isUnitCommitted,
  moveStateRows,
} from './common/duckdb-state.js';
import { createTable, evolveTable, qualified, readColumns, tableExists, type Columns } from './common/duckdb-table.js';
import { ensureWritableDir } from './common/fs-durable.js';
import { Mutex } from './common/mutex.js';
import { scanJsonlForDuckDB } from './common/duckdb-stage.js';
import { writeNdjson } from './common/ndjson-writer.js';
import { unitFileStem } from './common/unit-file-name.js';

/**
 * DuckDB's own default is 80% of RAM, and it keeps that much of the written table cached: a 200k-record load
 * peaked at 880 MB RSS. Loading one unit at a time on one thread, 128 MB peaked at ~450 MB and 256 MB at ~540 MB,
 * at the same speed; a 200k-record unit loads within 128 MB too (DuckDB writes full row groups out as it goes).
 */
export const DEFAULT_MEMORY_LIMIT = '128MB';

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
      .default(DEFAULT_MEMORY_LIMIT)
      .describe(
        `DuckDB's memory limit for the database file (shared by the sinks writing to it); beyond it DuckDB spills to \`<file>.tmp/\`. The default ${DEFAULT_MEMORY_LIMIT} keeps a load's peak memory low at no cost in speed (units load one at a time per file); 64MB ran out of memory loading a 10k-record unit.`,
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

/** A unit's rows in a newline-delimited JSON file, with their schema. */
interface UnitFile {
  path: string;
  gzip: boolean;
  /** Bytes of the longest line, when known: DuckDB's read buffers are sized to it. */
  longestLine?: number;
  /** The columns whose type is decided (null-only ones are left out: their values are null anyway). */
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
  private readConn: DuckDBConnection | undefined;
  private readonly reading = new Mutex();
  /** Connections for units' transactions, reused. */
  private readonly idle: DuckDBConnection[] = [];

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
    await this.conn.run(`SET GLOBAL memory_limit = ${quoteString(this.config.memory_limit)}`);
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
    return this.read((conn) => committedUnitIds(conn, this.context().pipeline, this.targetStateKey));
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>): Promise<CommitResult> {
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const staging = this.stagingFile(unit.id);
    const schema = new InferredSchema();
    try {
      const { rows } = await writeNdjson(batches, staging, { schema });
      const columns = decidedColumns(schema.columns);
      return await this.commitUnit(unit.id, { path: staging, gzip: false, columns, rows }, schema);
    } finally {
      await rm(staging, { force: true });
    }
  }

  /** Native path: the unit's JSONL file (gzip or not) is loaded by `read_json` as it is. Throws when it cannot be. */
  async writeUnitFile(unit: WorkUnit, file: RawFile): Promise<CommitResult> {
    if (file.format !== 'jsonl') throw new Error(`the duckdb sink loads only JSONL files natively, not ${file.format}`);
    if (await this.isCommitted(unit.id)) return { committed: false, records: 0 };
    const schema = new InferredSchema({ temporalText: true });
    // Another sink on this file may have removed the (then empty) directory when it closed.
    await mkdir(this.stagingDir, { recursive: true });
    const scan = await scanJsonlForDuckDB(file.path, schema, this.stagingFile(unit.id));
    try {
      const columns = decidedColumns(schema.columns);
      const staged = { path: scan.path, gzip: false, columns, rows: scan.records, longestLine: scan.longestLine };
      return await this.commitUnit(unit.id, staged, schema);
    } finally {
      if (scan.staged) await rm(scan.path, { force: true });
    }
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
        failpoint('duckdb:replace-swap');
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
    this.readConn?.closeSync();
    this.conn = undefined;
    this.readConn = undefined;
    if (this.db) {
      this.db.unclaim(this.lockKey());
      await this.db.release();
      this.db = undefined;
      // Leave no empty directory beside the database; one still in use by another sink is not empty, or is
      // made again before its next staging file.
      await rmdir(this.stagingDir).catch(() => undefined);
    }
  }

  /** A new staging file's path for a unit (removed on open if a crash left it behind). */
  private stagingFile(unitId: string): string {
    return path.join(
      this.stagingDir,
      `${this.stagingPrefix}${unitFileStem(unitId)}.${randomBytes(4).toString('hex')}.json`,
    );
  }

  /** A quick look before reading a unit; the transaction checks again before it commits. */
  private async isCommitted(unitId: string): Promise<boolean> {
    return this.read((conn) => isUnitCommitted(conn, this.context().pipeline, this.targetStateKey, unitId));
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

  private async commitUnit(unitId: string, file: UnitFile, schema: InferredSchema): Promise<CommitResult> {
    this.checkNames(schema.conflicts);
    this.noteConflicts(schema.conflicts);
    // First try keeping DATE/TIMESTAMP columns for ISO text (DuckDB parses it); widen to VARCHAR only if refused.
    let lenient = true;
    for (;;) {
      const typed = file.columns.size > 0;
      if (typed && this.needsChange(file.columns, lenient))
        await this.locked(() => this.prepareTable(file.columns, lenient));
      if (file.rows > 0) this.checkPrimaryKey(file.columns);
      try {
        const r = await this.database().withLoadSlot(() =>
          // Appends share the table (a schema change waits for them); a merge deletes rows, so it has it alone.
          (this.config.write === 'merge' ? this.locked.bind(this) : this.shared.bind(this))(async () => {
            // Another unit may have changed the table since: prepare it again.
            if (typed && this.needsChange(file.columns, lenient)) return undefined;
            const conn = await this.takeConnection();
            try {
              return await this.transaction(conn, unitId, file, typed ? new Map(this.columns) : undefined);
            } finally {
              this.giveConnection(conn);
            }
          }),
        );
        if (r) return r;
      } catch (err) {
        if (lenient && isConversionError(err)) {
          lenient = false;
          continue;
        }
        throw err instanceof SluiceError ? err : this.failure(`could not load unit ${unitId}`, err);
      }
    }
  }

  /** Whether the table must be created or altered before rows of `incoming` fit. */
  private needsChange(incoming: ReadonlyMap<string, LogicalType>, lenient: boolean): boolean {
    const columns = this.columns;
    if (!columns) return true;
    for (const [k, t] of incoming) {
      const cur = columns.get(k);
      if (cur === undefined) return true;
      if (duckdbType(joinTypes(cur, t, [k], undefined, { textIntoTemporal: lenient })) !== duckdbType(cur)) return true;
    }
    return false;
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
    return this.columns;
  }

  private checkPrimaryKey(incoming: ReadonlyMap<string, LogicalType>): void {
    for (const k of this.config.primary_key ?? []) {
      if (!incoming.has(k))
        throw new SluiceError(`${this.label}: primary key column "${k}" is not in the data`, {
          hint: `every row needs the key for \`write: merge\`: fix \`primary_key\` (the data has ${[...incoming.keys()].slice(0, 12).join(', ')}), or add the field with a transform`,
        });
    }
  }

  private async transaction(
    conn: DuckDBConnection,
    unitId: string,
    file: UnitFile,
    columns: Columns | undefined,
  ): Promise<CommitResult> {
    const pipeline = this.context().pipeline;
    await conn.run('BEGIN TRANSACTION');
    try {
      if (await isUnitCommitted(conn, pipeline, this.targetStateKey, unitId)) {
        await rollback(conn);
        return { committed: false, records: 0 };
      }
      const records = columns
        ? await this.insertRows(conn, file, columns)
        : await this.insertEmptyRows(conn, file.rows);
      await this.hooks.beforeCheckpoint?.(unitId);
      failpoint('duckdb:after-data');
      await insertStateRow(conn, pipeline, this.targetStateKey, unitId, records);
      await conn.run('COMMIT');
      return { committed: true, records };
    } catch (err) {
      await rollback(conn);
      throw err;
    }
  }

  /** Rows whose every value is null: nothing to type a column by, but still rows of the table when it exists. */
  private async insertEmptyRows(conn: DuckDBConnection, rows: number): Promise<number> {
    if (rows === 0) return 0;
    const first = this.columns?.keys().next().value;
    if (first === undefined) {
      this.context().log.warn(`${this.label}: ${rows} record(s) with only null values and no table yet: not stored`);
      return 0;
    }
    const table = qualified(this.schemaName, this.target);
    await conn.run(`INSERT INTO ${table} (${quoteIdent(first)}) SELECT NULL FROM range(${rows})`);
    return rows;
  }

  /** The unit's data statement(s): its file read with the table's types, appended or merged. Returns the rows. */
  private async insertRows(conn: DuckDBConnection, file: UnitFile, columns: Columns): Promise<number> {
    const table = qualified(this.schemaName, this.target);
    // Timestamps are read as TIMESTAMPTZ: DuckDB's TIMESTAMP parser ignores a UTC offset in the text.
    const specs = [...file.columns.keys()].map(
      (k) => `${quoteString(k)}: ${quoteString(duckdbType(columns.get(k)!, { forRead: true }))}`,
    );
    const source = `read_json(${quoteString(file.path)}, format = 'newline_delimited', compression = '${file.gzip ? 'gzip' : 'uncompressed'}', columns = {${specs.join(', ')}}${readBufferOption(file.longestLine)})`;
    if (this.config.write !== 'merge') {
      const r = await conn.run(`INSERT INTO ${table} BY NAME SELECT * FROM ${source}`);
      return Number(r.rowsChanged);
    }
    const keys = this.config.primary_key!.map(quoteIdent);
    const stage = `temp.${quoteIdent('_sluice_merge_stage')}`;
    await conn.run(`CREATE OR REPLACE TEMP TABLE ${quoteIdent('_sluice_merge_stage')} AS SELECT * FROM ${source}`);
    try {
      await conn.run(
        `DELETE FROM ${table} AS t USING ${stage} AS s WHERE ${keys.map((k) => `t.${k} IS NOT DISTINCT FROM s.${k}`).join(' AND ')}`,
      );
      // The temp table keeps the file's row order in its rowid: the last row for a key wins.
      await conn.run(
        `INSERT INTO ${table} BY NAME SELECT * FROM ${stage} QUALIFY row_number() OVER (PARTITION BY ${keys.join(', ')} ORDER BY rowid DESC) = 1`,
      );
      const n = await conn.runAndReadAll(`SELECT count(*) FROM ${stage}`);
      return Number(n.getRows()[0]![0]);
    } finally {
      await conn.run(`DROP TABLE IF EXISTS ${stage}`);
    }
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
    return this.database().withTable(this.lockKey(), fn);
  }

  private shared<T>(fn: () => Promise<T>): Promise<T> {
    return this.database().withTableShared(this.lockKey(), fn);
  }

  private async takeConnection(): Promise<DuckDBConnection> {
    return this.idle.pop() ?? (await this.database().connect());
  }

  private giveConnection(conn: DuckDBConnection): void {
    this.idle.push(conn);
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

/**
 * DuckDB's JSON reader holds two `maximum_object_size` per reading thread (default 16 MB: 32 MB buffers, in its
 * memory limit). When the longest line is known, objects are bounded by it (with room to spare).
 */
function readBufferOption(longestLine: number | undefined): string {
  if (longestLine === undefined) return '';
  return `, maximum_object_size = ${Math.max(MIN_OBJECT_SIZE, 2 * longestLine + 2)}`;
}

const MIN_OBJECT_SIZE = 1 << 20;

function isConversionError(err: unknown): boolean {
  return err instanceof Error && /conver|JSON transform error/i.test(err.message);
}

async function rollback(conn: DuckDBConnection): Promise<void> {
  try {
    await conn.run('ROLLBACK');
  } catch {
    // No transaction left to roll back (a failed COMMIT already ended it).
  }
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
