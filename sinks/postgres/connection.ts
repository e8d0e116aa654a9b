/**
 * Connections to the server: a small pool (one connection per unit transaction in flight), its settings, where it
 * points for `describe()`, and what a failure of the server or the network means for the engine's retries.
 *
 * The connection comes from `url` and the libpq environment, as `psql` would take it (`pg` reads PGHOST, PGPORT,
 * PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE and ~/.pgpass; `sslmode` in the URL). The password is registered as a
 * secret before anything connects, so no log line or error message can carry it.
 */
import type pg from 'pg';
import { SluiceError } from '../../src/core/errors.js';
import { lazyPackage } from '../../src/core/lazy-package.js';
import { redact, registerSecret } from '../../src/core/redact.js';
import { sinkFailures, WarehouseSinkError } from '../../src/sink-kit/warehouse/failures.js';
import { SourceFailure } from '../../src/sink-kit/warehouse/source-failure.js';

const driver = lazyPackage<typeof pg>('pg');

/** Connections at most: the engine reads 4 units at once by default, and each unit commits in its own transaction. */
const POOL_SIZE = 4;

export interface Target {
  host: string;
  port: number;
  database: string;
  user: string;
}

/**
 * `sslmode` as libpq means it, in the URL and in PGSSLMODE (`pg` on its own verifies the certificate for every
 * mode): `require` encrypts without verifying, `verify-ca` checks the chain, `verify-full` the host name too;
 * `prefer` is taken as `require` (`pg` cannot fall back to plain text).
 */
function libpqSsl(url: string | undefined): { connectionString?: string; ssl?: pg.ClientConfig['ssl'] } {
  if (url !== undefined && /[?&]sslmode=/.test(url))
    return { connectionString: /[?&]uselibpqcompat=/.test(url) ? url : `${url}&uselibpqcompat=true` };
  const mode = process.env.PGSSLMODE;
  const ssl: pg.ClientConfig['ssl'] | undefined =
    mode === 'disable' || mode === 'allow'
      ? false
      : mode === 'prefer' || mode === 'require'
        ? { rejectUnauthorized: false }
        : mode === 'verify-ca'
          ? { checkServerIdentity: () => undefined }
          : mode === 'verify-full'
            ? true
            : undefined;
  return { ...(url !== undefined && { connectionString: url }), ...(ssl !== undefined && { ssl }) };
}

function clientConfig(url: string | undefined): pg.ClientConfig {
  // Dates widened to timestamptz and timestamps shown as text convert in UTC, whatever the server's zone.
  return { ...libpqSsl(url), application_name: 'sluice', options: '-c TimeZone=UTC' };
}

/** Where `url` and the environment point, resolved as the driver resolves them; registers the password as a secret. */
export function resolveTarget(url: string | undefined): Target {
  registerSecret(process.env.PGPASSWORD);
  if (url !== undefined) {
    // The URL's password, also when the driver cannot parse the rest.
    const m = /^[a-z]+:\/\/[^:/@]*:([^@/]*)@/i.exec(url);
    if (m?.[1]) {
      registerSecret(m[1]);
      registerSecret(safeDecode(m[1]));
    }
  }
  let c: pg.Client;
  try {
    c = new (driver().Client)(clientConfig(url));
  } catch (err) {
    throw new SluiceError(`postgres sink: \`url\` is not a connection URL: ${errorLine(err)}`, {
      hint: 'write it as postgres://user@host:5432/database (percent-encode special characters of the password), or leave it empty to use PGHOST, PGUSER, …',
      cause: err,
    });
  }
  const password = (c as unknown as { password?: unknown }).password;
  if (typeof password === 'string') registerSecret(password);
  return { host: c.host, port: c.port, database: c.database ?? c.user ?? '', user: c.user ?? '' };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function targetText(t: Target): string {
  const host = t.host.startsWith('/') ? `${t.host} (socket)` : t.host;
  return `${host}:${t.port}/${t.database}`;
}

export function createPool(url: string | undefined, onIdleError: (err: Error) => void): pg.Pool {
  const pool = new (driver().Pool)({ ...clientConfig(url), max: POOL_SIZE, idleTimeoutMillis: 30_000 });
  // A connection that breaks while idle (the server restarted) is dropped by the pool; without a listener the
  // process would die of the 'error' event.
  pool.on('error', onIdleError);
  // A client emits 'error' whenever its link fails, also while it is checked out between two queries and once
  // more when the socket closes after a FATAL message (57P01 on a server shutdown). The pool listens only while the
  // client is idle: this listener makes sure no such event ever ends the process. What failed is reported by the
  // query that fails, or by the pool's listener above.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/**
 * SQLSTATE classes and codes that say the server or the link failed, not the statement: the unit committed
 * nothing, and the same unit again can succeed (08 connection exception, 57P01–03 shutdown / starting up,
 * 53300 too many connections, 40001 / 40P01 serialisation failure / deadlock).
 */
const TRANSIENT_CODES = new Set(['57P01', '57P02', '57P03', '53300', '40001', '40P01']);
const TRANSIENT_ERRNO = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTCONN', 'EHOSTUNREACH']);

export function isTransientPgError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code.startsWith('08') || TRANSIENT_CODES.has(code) || TRANSIENT_ERRNO.has(code)) return true;
  const msg = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|connection (?:is )?closed|Client has encountered a connection error|Client was closed and is not queryable/i.test(
    msg,
  );
}

/** A failure of the Postgres sink, typed for core/retry.ts: transient when the server or the link failed. */
export class PostgresSinkError extends WarehouseSinkError {}

/** First line of an error's text, with any secret taken out. */
export function errorLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | undefined)?.code;
  const first = msg.split('\n')[0] ?? '';
  return redact(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? `${first} (SQLSTATE ${code})` : first);
}

/** Why the server could not be reached or refused us, with the fix. */
export function connectFailure(label: string, target: Target, err: unknown): PostgresSinkError {
  // Connected, then lost the link while committing: said as such, not as a failure to connect.
  if (err instanceof PostgresSinkError)
    return new PostgresSinkError(`${label}: ${err.message.replace(/^postgres sink: /, '')}`, {
      hint: err.hint ?? '',
      cause: err.cause,
      transient: err.transient,
    });
  const code = (err as { code?: unknown } | undefined)?.code;
  const hint =
    code === '28P01' || code === '28000'
      ? 'check the user and password (in `url`, PGPASSWORD or ~/.pgpass) and the server’s pg_hba.conf'
      : code === '3D000'
        ? `create the database (createdb ${target.database}), or point \`url\` / PGDATABASE at one that exists`
        : 'check that the server runs and accepts connections there (`url`, or PGHOST / PGPORT), e.g. with `pg_isready`';
  return new PostgresSinkError(`${label}: cannot connect to ${targetText(target)}: ${errorLine(err)}`, {
    hint,
    cause: err,
    transient: isTransientPgError(err),
  });
}

/**
 * The link failed while COMMIT was on its way: the server may have committed (it got the COMMIT, its answer was
 * lost) or not. Transient all the same: a unit's next attempt reads `_sluice_state` before it loads anything, and
 * its state row's primary key stops a second commit even when the first is still finishing on the server.
 */
function commitInDoubt(err: unknown): PostgresSinkError {
  return new PostgresSinkError(
    `postgres sink: the connection failed while COMMIT was on its way (${errorLine(err)}): the transaction may have committed`,
    {
      hint: 'nothing to do: the next attempt of the unit finds out from _sluice_state whether it committed and loads it only if it did not (a rerun does the same)',
      cause: err,
      transient: true,
    },
  );
}

/**
 * Runs `fn` in a transaction on a pooled connection: committed when it returns, rolled back when it throws. A
 * connection that failed is destroyed rather than handed back to the pool. A link that fails during COMMIT is
 * reported as such (`commitInDoubt`), never as "nothing committed".
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error): void => void (broken = err);
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    let result: T;
    try {
      result = await fn(client);
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => void (broken ??= e));
      throw err;
    }
    try {
      await client.query('COMMIT');
    } catch (err) {
      if (!isTransientPgError(err)) throw err;
      broken = err as Error;
      throw commitInDoubt(err);
    }
    return result;
  } catch (err) {
    broken ??= isTransientPgError(err) ? (err as Error) : undefined;
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken ?? false);
  }
}

export const { sinkFailure, guarded } = sinkFailures({
  isTransient: isTransientPgError,
  errorLine,
  transientHint:
    'the connection to the server failed; nothing of the unit was committed: run again (committed units are skipped)',
  error: PostgresSinkError,
});

export { SourceFailure };

/** Why `open()` failed: could not connect, or connected and could not prepare the schema. */
export function openFailure(label: string, schema: string, target: Target, err: unknown): SluiceError {
  const code = (err as { code?: unknown } | undefined)?.code;
  // Classes 08 (connection), 28 (authorisation), 3D (no such database), 57P03 (starting up): could not connect.
  if (typeof code === 'string' && code.length === 5 && !/^(08|28|3D|57P03)/.test(code))
    return sinkFailure(label, `could not prepare schema ${schema}`, err);
  return connectFailure(label, target, err);
}
