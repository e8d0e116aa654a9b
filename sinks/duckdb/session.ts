/**
 * What a duckdb sink holds while it is open, and how it reaches the database: the shared instance with this
 * table claimed, the main connection (schema changes, merges, the swap), a connection of its own for reads outside
 * the table lock, connections reused by units' transactions, and the staging directory. Kept apart from the sink
 * so the stages (table-columns.ts, commit.ts) take one object that knows the locking rules, not six fields.
 */
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { SinkContext } from '../../src/core/types.js';
import { Mutex } from '../../src/core/concurrency.js';
import { quoteIdent, quoteString } from '../../src/core/sql.js';
import type { DuckDBSinkConfig, TableNames } from './config.js';
import { DuckDBDatabase } from './database.js';
import { StagingDir } from './stage.js';
import { ensureSystemTables } from './state.js';

/** Lock key of the tables every sink on the file shares (`_sluice_state`, `_sluice_runs`, schemas). */
const SHARED = '\0shared';

export class DuckDBSession {
  private readConn: DuckDBConnection | undefined;
  private readonly reading = new Mutex();
  /** Connections for units' transactions, reused. */
  private readonly idle: DuckDBConnection[] = [];

  private constructor(
    readonly ctx: SinkContext,
    readonly db: DuckDBDatabase,
    private readonly names: TableNames,
    readonly conn: DuckDBConnection,
    readonly staging: StagingDir,
  ) {}

  /**
   * Acquires the file's database and claims the table (one sink per table in a process); `held` receives the
   * session before anything else can fail, so `close()` releases what was taken.
   */
  static async open(
    ctx: SinkContext,
    config: DuckDBSinkConfig,
    names: TableNames,
    label: string,
    held: (s: DuckDBSession) => void,
  ): Promise<DuckDBSession> {
    const file = path.resolve(ctx.baseDir, config.path);
    const db = await DuckDBDatabase.acquire(file, 'duckdb sink');
    try {
      db.claim(names.lockKey);
    } catch (err) {
      await db.release();
      throw err;
    }
    const staging = new StagingDir(`${file}.sluice-tmp`, names.stateKey);
    let conn: DuckDBConnection;
    try {
      conn = await db.connect();
    } catch (err) {
      db.unclaim(names.lockKey);
      await db.release();
      throw err;
    }
    const session = new DuckDBSession(ctx, db, names, conn, staging);
    held(session);
    await conn.run(`SET GLOBAL memory_limit = ${quoteString(config.memory_limit)}`);
    await staging.open(label);
    await session.shared(async () => {
      await ensureSystemTables(conn);
      await conn.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(names.schema)}`);
    });
    return session;
  }

  /** Under the lock of the tables every sink on the file shares. */
  shared<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.withTable(SHARED, fn);
  }

  /** With the table to itself: schema changes, merges (deletes) and the swap, which DuckDB rejects beside writers. */
  locked<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.withTable(this.names.lockKey, fn);
  }

  /** Beside other appends to the table; a schema change waits for them. */
  appending<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.withTableShared(this.names.lockKey, fn);
  }

  /**
   * Reads outside the table lock go through a connection of their own, one at a time: a DuckDB connection runs
   * one statement at a time, and the main one may be inside another unit's transaction.
   */
  read<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.reading.run(async () => {
      this.readConn ??= await this.db.connect();
      return fn(this.readConn);
    });
  }

  /** A connection for one unit's transaction, handed back for the next. */
  async withUnitConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    const conn = this.idle.pop() ?? (await this.db.connect());
    try {
      return await fn(conn);
    } finally {
      this.idle.push(conn);
    }
  }

  async close(): Promise<void> {
    for (const c of this.idle.splice(0)) c.closeSync();
    this.conn.closeSync();
    this.readConn?.closeSync();
    this.readConn = undefined;
    this.db.unclaim(this.names.lockKey);
    await this.db.release();
    await this.staging.close();
  }
}
