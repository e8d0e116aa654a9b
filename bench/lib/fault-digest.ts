/** The fault matrix's digests of a cell's output (bench/fault-matrix.ts), computed by DuckDB or by Postgres. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { canonical } from '../../test/support/compare-tables.js';
import type { PostgresServer } from '../../test/support/postgres-server.js';
import { KEYS, VOLATILE, type PipelineKind, type SinkKind } from './fault-cells.js';
import { digestOf, sql, withDuckDB, type Digest } from './matrix-common.js';

/** Rows, distinct keys and a checksum of one cell's committed output, computed by DuckDB. */
export async function digest(p: PipelineKind, s: SinkKind, dir: string): Promise<Digest> {
  return withDuckDB(async (conn) => {
    let relation: string;
    if (s === 'duckdb') {
      await conn.run(`ATTACH ${sql(path.join(dir, 'out/warehouse.duckdb'))} AS w (READ_ONLY)`);
      relation = 'w.t';
    } else {
      const out = path.join(dir, 'out', s);
      const files = committedFiles(out).map((f) => sql(path.join(out, f)));
      relation =
        s === 'parquet'
          ? `read_parquet([${files.join(', ')}], union_by_name = true)`
          : `read_json([${files.join(', ')}], format = 'newline_delimited', union_by_name = true)`;
    }
    return digestOf(conn, relation, { key: KEYS[p], volatile: VOLATILE });
  });
}

/**
 * The same digest as `digest`, computed over the Postgres table: each row as the server renders it in JSON, less the
 * volatile columns, in a canonical form (keys sorted, instants as ISO text), hashed in a fixed order.
 */
export async function postgresDigest(server: PostgresServer, database: string, p: PipelineKind): Promise<Digest> {
  const rows = await server.query<{ k: string | null; j: Record<string, unknown> }>(
    database,
    `SELECT (${KEYS[p]})::text AS k, to_jsonb(t) - $1::text[] AS j FROM public.t t`,
    [VOLATILE],
  );
  const lines = rows.map((r) => JSON.stringify(canonical(r.j))).sort();
  const hash = createHash('sha256');
  for (const l of lines) hash.update(l).update('\n');
  return {
    rows: rows.length,
    keys: new Set(rows.filter((r) => r.k !== null).map((r) => r.k)).size,
    checksum: hash.digest('hex').slice(0, 16),
  };
}

/** The data files a file sink's manifest lists: exactly the committed data. */
function committedFiles(dir: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(dir, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { files: string[]; staged?: unknown }>;
  };
  const files = new Set<string>();
  for (const u of Object.values(manifest.units)) {
    if (u.staged) throw new Error(`${dir}: a unit is still staged after a finished run`);
    for (const f of u.files) files.add(f);
  }
  return [...files].sort();
}
