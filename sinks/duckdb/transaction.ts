/** DuckDB transactions as the sink runs them: a failure rolls back, and a rollback never hides that failure. */
import type { DuckDBConnection } from '@duckdb/node-api';

/** Runs `fn` in a transaction on `conn`, committed when it returns and rolled back when it throws. */
export async function inTransaction<T>(conn: DuckDBConnection, fn: () => Promise<T>): Promise<T> {
  await conn.run('BEGIN TRANSACTION');
  try {
    const result = await fn();
    await conn.run('COMMIT');
    return result;
  } catch (err) {
    await rollback(conn);
    throw err;
  }
}

export async function rollback(conn: DuckDBConnection): Promise<void> {
  try {
    await conn.run('ROLLBACK');
  } catch {
    // No transaction left to roll back (a failed COMMIT already ended it).
  }
}
