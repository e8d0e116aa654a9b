/**
 * What the fault and crash matrices (bench/fault-matrix.ts, bench/crash-matrix.ts) share: an output's digest as
 * DuckDB computes it, a throwaway in-memory DuckDB, bounded parallel cells, and their small text helpers.
 */
import { createHash } from 'node:crypto';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';

/** What DuckDB computes over an output: rows, distinct keys, and a hash over every row's JSON. */
export interface Digest {
  rows: number;
  keys: number;
  checksum: string;
  /** A hash of each distinct row, when asked for: what a reader sees mid-run must be a subset of a clean run. */
  rowHashes?: Set<string>;
}

export function sameDigest(a: Digest, b: Digest): boolean {
  return a.rows === b.rows && a.keys === b.keys && a.checksum === b.checksum;
}

/**
 * The digest of `relation` (a table or a `read_…` call): `key` is the SQL expression that identifies a record,
 * `volatile` the columns that differ between two correct runs (fetch times, per-request ids), left out.
 */
export async function digestOf(
  conn: DuckDBConnection,
  relation: string,
  opts: { key: string; volatile: string[]; rowHashes?: boolean },
): Promise<Digest> {
  const columns = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${relation}`))
    .getRowObjectsJS()
    .map((r) => String(r.column_name));
  const volatile = opts.volatile.filter((c) => columns.includes(c));
  const t = `(SELECT * ${volatile.length ? `EXCLUDE (${volatile.join(', ')})` : ''} FROM ${relation}) t`;
  // Each row as DuckDB renders it in JSON, keys sorted and numbers re-read: files published at different moments
  // may order a struct's fields differently, or type a column DOUBLE where another has BIGINT (same values).
  const read = (
    await conn.runAndReadAll(`SELECT ${opts.key} AS k, to_json(t)::VARCHAR AS j FROM ${t}`)
  ).getRowObjectsJS();
  const lines = read.map((r) => JSON.stringify(sortKeys(JSON.parse(String(r.j))))).sort();
  const hash = createHash('sha256');
  for (const l of lines) hash.update(l).update('\n');
  const digest: Digest = {
    rows: read.length,
    keys: new Set(read.filter((r) => r.k !== null).map((r) => String(r.k))).size,
    checksum: hash.digest('hex').slice(0, 16),
  };
  if (opts.rowHashes) digest.rowHashes = new Set(lines.map((l) => createHash('sha1').update(l).digest('base64')));
  return digest;
}

/** Runs `fn` on a connection to a fresh in-memory DuckDB (UTC), closed afterwards. */
export async function withDuckDB<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    return await fn(conn);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** `fn` over `items`, at most `n` at once; results in the items' order. */
export async function inParallel<T, R>(
  items: T[],
  n: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, items.length)) }, worker));
  return out;
}

/** "filter 1, enrich 1", or "none". */
export function paidText(p: Record<string, number>): string {
  const parts = Object.entries(p).map(([k, n]) => `${k} ${n}`);
  return parts.length ? parts.join(', ') : 'none';
}

/** The value after `--name` on the command line. */
export function cliArg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

/** A SQL string literal. */
export function sql(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, sortKeys(o[k])]),
  );
}
