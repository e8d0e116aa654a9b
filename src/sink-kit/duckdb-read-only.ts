/**
 * Read-only queries on DuckDB, for checks after the load (`QueryableOutput.query`), enforced by DuckDB itself:
 *
 * - one statement: a prepared statement, and DuckDB refuses to prepare more than one;
 * - a query: the prepared statement's type must be SELECT (a COPY … TO or an ATTACH is refused before it runs);
 * - no write: it runs in a `BEGIN TRANSACTION READ ONLY`, rolled back after;
 * - no file or table beyond the output: a locked-down instance (`lockedDownInstance`) with external access off,
 *   only the output's own files allowed (`allowed_paths`), and its configuration locked. A file output is read in
 *   such an instance. A DuckDB database is not: it is open for writing in this process (the sink still records the
 *   run in it), and a second instance on the same file would take and then, on close, drop this process's lock on
 *   it (POSIX record locks belong to the process), letting another process open it for writing. So a query on the
 *   database is first bound in a locked-down instance that holds an empty copy of the checked table and nothing
 *   else (`BindSandbox`): whatever names another table or reaches a file is refused there, before it runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance, StatementType, type DuckDBConnection } from '@duckdb/node-api';
import { QueryRefused } from '../core/errors.js';
import type { Row } from '../core/types.js';
import { quoteIdent, quoteString } from '../core/sql.js';

/** Runs `sql` as one read-only query on `conn` (see the module's comment); refusals throw QueryRefused. */
export async function readOnlyQuery(conn: DuckDBConnection, sql: string): Promise<Row[]> {
  await conn.run('BEGIN TRANSACTION READ ONLY');
  try {
    const prepared = await conn.prepare(sql).catch((err: unknown) => {
      throw refusal(err) ?? err;
    });
    try {
      if (prepared.statementType !== StatementType.SELECT)
        throw new QueryRefused(`refused: it is not a query (a ${StatementType[prepared.statementType]} statement)`);
      return (await prepared.runAndReadAll()).getRowObjectsJson() as Row[];
    } catch (err) {
      throw refusal(err) ?? err;
    } finally {
      prepared.destroySync();
    }
  } finally {
    await conn.run('ROLLBACK').catch(() => undefined);
  }
}

/** DuckDB's refusals of what a read-only check may not do, as QueryRefused; undefined for any other error. */
export function refusal(err: unknown): QueryRefused | undefined {
  if (err instanceof QueryRefused) return err;
  const message = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  const why = /Cannot prepare multiple statements/i.test(message)
    ? 'it holds more than one statement'
    : /read-only mode|read-only transaction/i.test(message)
      ? 'it writes'
      : /^Permission Error/i.test(message)
        ? 'it reaches outside the checked output'
        : /^Catalog Error/i.test(message)
          ? 'it names something beyond the checked table'
          : undefined;
  return why === undefined ? undefined : new QueryRefused(`refused: ${why} (${message})`, { cause: err });
}

/**
 * An in-memory DuckDB that can read `allowedPaths` and no other file (nor the network, nor extensions from
 * disk), whose settings cannot be changed back; `setup` runs before the lock (schemas, empty tables). Its spill
 * directory is a private temporary one, removed by `close()`.
 */
export async function lockedDownInstance(
  allowedPaths: readonly string[],
  setup: readonly string[] = [],
): Promise<{ conn: DuckDBConnection; close(): Promise<void> }> {
  const spill = await mkdtemp(path.join(tmpdir(), 'sluice-check-'));
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  const close = async (): Promise<void> => {
    conn.closeSync();
    db.closeSync();
    await rm(spill, { recursive: true, force: true });
  };
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    for (const statement of setup) await conn.run(statement);
    if (allowedPaths.length > 0)
      await conn.run(`SET allowed_paths = [${allowedPaths.map((p) => quoteString(p)).join(', ')}]`);
    await conn.run(`SET temp_directory = ${quoteString(spill)}`);
    await conn.run('SET autoinstall_known_extensions = false');
    await conn.run('SET enable_external_access = false');
    await conn.run('SET lock_configuration = true');
    return { conn, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * A locked-down instance holding an empty table shaped like the checked one (same schema, name and column types),
 * and nothing else: a query that binds there reads only that table and no file. Binding is all it does.
 */
export class BindSandbox {
  private constructor(private readonly instance: { conn: DuckDBConnection; close(): Promise<void> }) {}

  /** The columns of `schema.table` on `conn` (the sink's database), copied empty; undefined if it has none. */
  static async of(conn: DuckDBConnection, schema: string, table: string): Promise<BindSandbox | undefined> {
    const columns = (
      await conn.runAndReadAll(
        `SELECT column_name, data_type FROM duckdb_columns()
         WHERE database_name = current_database() AND schema_name = ${quoteString(schema)} AND table_name = ${quoteString(table)}
         ORDER BY column_index`,
      )
    ).getRowObjectsJson() as { column_name: string; data_type: string }[];
    if (columns.length === 0) return undefined;
    const ddl = columns.map((c) => `${quoteIdent(c.column_name)} ${c.data_type}`).join(', ');
    return new BindSandbox(
      await lockedDownInstance(
        [],
        [
          `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`,
          `CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(table)} (${ddl})`,
        ],
      ),
    );
  }

  /** Throws QueryRefused when `sql` cannot be bound against the checked table alone, or is not one query. */
  async bind(sql: string): Promise<void> {
    const { conn } = this.instance;
    await conn.run('BEGIN TRANSACTION READ ONLY');
    try {
      const prepared = await conn.prepare(sql);
      const type = prepared.statementType;
      prepared.destroySync();
      if (type !== StatementType.SELECT)
        throw new QueryRefused(`refused: it is not a query (a ${StatementType[type]} statement)`);
    } catch (err) {
      throw refusal(err) ?? err;
    } finally {
      await conn.run('ROLLBACK').catch(() => undefined);
    }
  }

  close(): Promise<void> {
    return this.instance.close();
  }
}
