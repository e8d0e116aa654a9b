/**
 * The server, through the official client (`@clickhouse/client`, its HTTP interface): where `url` points for
 * `describe()`, the statements the sink runs, and what a failure of the server or the network means for the engine's
 * retries.
 *
 * Only what ClickHouse 18.16 and current releases both understand: no query parameters (`{p:String}` came in 19.x —
 * values are written as escaped literals, types.ts `literal`), no SETTINGS clause in a SELECT (settings go with the
 * request), and errors read from their text: 18.16 answers `Code: 60, e.displayText() = DB::Exception: …` without
 * the `(TYPE)` the client parses, so the client hands back a plain Error and the code is read here (`errorCode`).
 *
 * The password is registered as a secret before anything connects, so no log line or error message can carry it;
 * the client's own logger is off (what fails comes back as an error, redacted here).
 */
import { Readable } from 'node:stream';
import type * as ClickHouseDriver from '@clickhouse/client';
import type { ClickHouseClient } from '@clickhouse/client';
import { SluiceError } from '../../src/core/errors.js';
import { lazyPackage } from '../../src/core/lazy-package.js';
import { redact, registerSecret } from '../../src/core/redact.js';
import { sinkFailures, WarehouseSinkError } from '../../src/sink-kit/warehouse/failures.js';
import { SourceFailure } from '../../src/sink-kit/warehouse/source-failure.js';
import { UNCOMMITTED_HINT } from '../../src/sink-kit/warehouse/unit-result.js';

const driver = lazyPackage<typeof ClickHouseDriver>('@clickhouse/client');

/** Connections at most: the engine reads 4 units at once by default, each streams one insert, and a few statements. */
const MAX_CONNECTIONS = 8;
/** A unit's insert streams for as long as its source reads: the request waits as long as the unit may take. */
const REQUEST_TIMEOUT_MS = 3_600_000;

export interface Target {
  url: URL;
  user: string;
  database: string;
}

/** Where `url` points and as whom; registers the password as a secret. */
export function resolveTarget(url: string, database: string): Target & { password: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch (err) {
    throw new SluiceError('clickhouse sink: `url` is not a URL', {
      hint: 'write it as http://user:password@host:8123 (percent-encode special characters of the password), e.g. `${CLICKHOUSE_URL}`',
      cause: err,
    });
  }
  const password = safeDecode(u.password);
  registerSecret(u.password);
  registerSecret(password);
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new SluiceError(`clickhouse sink: \`url\` must be http:// or https://, not ${u.protocol}//`, {
      hint: "the sink speaks ClickHouse's HTTP interface (port 8123, or 8443 with TLS), not the native protocol (9000)",
    });
  const user = safeDecode(u.username) || 'default';
  const bare = new URL(u.href);
  bare.username = '';
  bare.password = '';
  return { url: bare, user, password, database };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function targetText(t: Target): string {
  return `${t.url.protocol}//${t.url.host}/${t.database}`;
}

/** Statements on the server: DDL and small writes (`exec`), reads (`rows`), and a unit's streamed insert. */
export class Server {
  readonly client: ClickHouseClient;

  constructor(target: Target & { password: string }) {
    const { createClient, ClickHouseLogLevel } = driver();
    this.client = createClient({
      url: target.url.href,
      username: target.user,
      password: target.password,
      application: 'sluice',
      request_timeout: REQUEST_TIMEOUT_MS,
      max_open_connections: MAX_CONNECTIONS,
      // Responses compressed (the server compresses what it sends when asked); requests not: CPU on a loaded client.
      compression: { request: false, response: true },
      log: { level: ClickHouseLogLevel.OFF },
    });
  }

  async exec(sql: string): Promise<void> {
    await this.client.command({ query: sql });
  }

  /** The rows of a SELECT, 64-bit integers as JSON numbers (callers read only counts and small numbers). */
  async rows<T>(sql: string, settings: Record<string, string | number> = {}): Promise<T[]> {
    const result = await this.client.query({
      query: sql,
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 0, ...settings },
    });
    return result.json<T>();
  }

  /** Streams `body` (TabSeparated lines) into `table`'s `columns` (both already quoted); resolves when it is stored. */
  async insert(table: string, columns: readonly string[], body: Readable): Promise<void> {
    await this.client.insert({
      table,
      columns: [...columns] as [string, ...string[]],
      values: body,
      format: 'TabSeparated',
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** The server's error code (`Code: 60, …` in 18.16's text; `ClickHouseError.code` where the client parsed it). */
export function errorCode(err: unknown): number | undefined {
  if (err instanceof driver().ClickHouseError && /^\d+$/.test(err.code)) return Number(err.code);
  const msg = err instanceof Error ? err.message : typeof err === 'string' ? err : '';
  const m = /^\s*Code: (\d+)[,.]/.exec(msg);
  return m ? Number(m[1]) : undefined;
}

/**
 * Server errors that say the server or the link failed, not the statement: the same statement again can succeed.
 * 3 UNEXPECTED_END_OF_FILE and 33 CANNOT_READ_ALL_DATA (the request's body was cut), 159 TIMEOUT_EXCEEDED,
 * 202 TOO_MANY_SIMULTANEOUS_QUERIES, 203 NO_FREE_CONNECTION, 209 SOCKET_TIMEOUT, 210 NETWORK_ERROR,
 * 236 ABORTED, 252 TOO_MANY_PARTS (inserts faster than merges), 394 QUERY_WAS_CANCELLED (a shutdown),
 * 1000 POCO_EXCEPTION (the server's socket library: a reset connection).
 */
const TRANSIENT_CODES = new Set([3, 33, 159, 202, 203, 209, 210, 236, 252, 394, 1000]);
const TRANSIENT_ERRNO = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTCONN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

/**
 * Whether `err` says the server or the link failed. A failed answer that is not ClickHouse's (no `Code: N`) came
 * from something between (a proxy, a load balancer): the client keeps no HTTP status, so its text decides — a
 * gateway's 502/503/504 or a 429 is transient, anything else is not.
 */
export function isTransientClickHouseError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const errno = (e as { code?: unknown }).code;
    if (typeof errno === 'string' && TRANSIENT_ERRNO.has(errno)) return true;
    const code = errorCode(e);
    if (code !== undefined) return TRANSIENT_CODES.has(code);
    if (/socket hang up|Timeout error|other side closed|aborted|connection (?:reset|refused|closed)/i.test(e.message))
      return true;
    if (
      /\b(?:429|502|503|504)\b|Bad Gateway|Service (?:Temporarily )?Unavailable|Gateway Time-?out|Too Many Requests/i.test(
        e.message,
      )
    )
      return true;
  }
  return false;
}

/** A failure of the ClickHouse sink, typed for core/retry.ts: transient when the server or the link failed. */
export class ClickHouseSinkError extends WarehouseSinkError {}

/** First line of an error's text, with any secret taken out and 18.16's `e.what()` tail dropped. */
export function errorLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const first = (msg.trim().split('\n')[0] ?? '').replace(/, e\.what\(\) = DB::Exception$/, '');
  return redact(first.length > 500 ? `${first.slice(0, 500)}…` : first);
}

export const { sinkFailure, guarded } = sinkFailures({
  isTransient: isTransientClickHouseError,
  errorLine,
  transientHint:
    'the connection to the server failed; what the unit staged is not visible to readers: run again (committed units are skipped)',
  error: ClickHouseSinkError,
});

export { SourceFailure };

/** Why `open()` failed: could not reach the server, or reached it and it refused. */
export function openFailure(label: string, target: Target, err: unknown): SluiceError {
  const code = errorCode(err);
  const transient = isTransientClickHouseError(err);
  const hint =
    code === 193 || code === 192 || code === 516
      ? 'check the user and password in `url` (and the user’s <networks> in the server’s users.xml)'
      : code === 164 || code === 497
        ? 'the user may not write here (readonly, or no grant): give it a profile with readonly = 0'
        : transient
          ? 'check that the server runs and its HTTP interface answers there (`curl <url>/ping` says Ok.)'
          : UNCOMMITTED_HINT;
  return new ClickHouseSinkError(`${label}: cannot prepare ${targetText(target)}: ${errorLine(err)}`, {
    hint,
    cause: err,
    transient,
  });
}
