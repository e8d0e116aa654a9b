/**
 * Read-only queries on PostgreSQL, for checks after the load (`QueryableOutput.query`), enforced by the server: a
 * client of the sink's pool in a `BEGIN TRANSACTION READ ONLY` (rolled back after, the session's advisory locks
 * released), the statement sent over the extended protocol (Parse, Bind, Execute), in which the server takes
 * exactly one statement. A write, a second statement or a data-modifying `WITH` is refused by the server before
 * anything changes. What the connection's
 * role may read is the role's business: give sluice's user no more than it needs (a superuser can read server files
 * with `pg_read_file` even in a read-only transaction).
 */
import type pg from 'pg';
import { QueryRefused } from '../../src/core/errors.js';
import type { Row } from '../../src/core/types.js';

export async function readOnlyQuery(pool: pg.Pool, sql: string): Promise<Row[]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN TRANSACTION READ ONLY');
    try {
      // pg's own option (its type definitions lag): the extended protocol even without parameters.
      const extended: pg.QueryConfig & { queryMode: 'extended' } = { text: sql, queryMode: 'extended' };
      return (await client.query<Row>(extended)).rows;
    } catch (err) {
      throw refusal(err) ?? err;
    } finally {
      // The rollback undoes what a read-only transaction still lets a query make (a large object, a setting); the
      // one thing a SELECT leaves that outlives its transaction is a session's advisory lock, released before the
      // client serves the sink again. (Not DISCARD ALL: it would also forget statements the driver keeps prepared.)
      await client
        .query('ROLLBACK')
        .then(() => client.query('SELECT pg_advisory_unlock_all()'))
        .catch((err: unknown) => void (broken = err as Error));
    }
  } finally {
    // A client that could not be cleaned is closed, not handed to the next query.
    client.release(broken);
  }
}

/** The server's refusals of what a read-only check may not do, as QueryRefused; undefined for any other error. */
function refusal(err: unknown): QueryRefused | undefined {
  const e = err as { code?: string; message?: string };
  const message = (e.message ?? String(err)).split('\n')[0]!;
  const why =
    e.code === '25006' || /data-modifying statement/i.test(message)
      ? 'it writes'
      : /multiple commands into a prepared statement/i.test(message)
        ? 'it holds more than one statement'
        : undefined;
  return why === undefined ? undefined : new QueryRefused(`refused: ${why} (${message})`, { cause: err });
}
