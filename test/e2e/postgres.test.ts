/**
 * The postgres sink end to end, against a throwaway cluster (test/support/postgres-server.ts) and the emulator:
 *
 * - a SERP crawl into Postgres AND DuckDB in one run: the two tables hold the same rows (count, distinct keys, a
 *   checksum over every value);
 * - four `--shard i/4` processes loading one table at once give the single run's table;
 *
 * The server restarted at every point of a run: postgres-restart.test.ts. What every sink promises — kill -9 at each
 * failpoint of the commit path, checkpoints stored, cursors over nights, write modes — the sink conformance suite
 * proves for Postgres with the others (test/sinks/conformance/); every source kind into Postgres beside DuckDB is
 * postgres-sources.test.ts.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { digest, type Digest } from '../support/compare-tables.js';
import { hasPostgres, PG_PASSWORD } from '../support/postgres-server.js';
import { API_KEY, query, sluice, variant, workspace, type Obj, type Workspace } from './harness.js';
import { postgresAndEmulator } from './postgres-fixture.js';

const live = postgresAndEmulator();

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const QUERIES = [
  'coffee roasters portland',
  'ramen berlin',
  'bike repair lyon',
  'vegan bakery oslo',
  'climbing gym madrid',
  'bookshop edinburgh',
  'jazz bar new orleans',
  'tailor hanoi',
];

let databases = 0;
async function database(): Promise<string> {
  const name = `e2e_${++databases}`;
  await live.server.createDatabase(name);
  return name;
}

async function pgRows(db: string, table: string): Promise<Obj[]> {
  return (await live.server.query(db, `SELECT to_jsonb(t) AS j FROM public.${table} t`)).map((r) => r.j as Obj);
}

async function duckRows(ws: Workspace, table: string): Promise<Obj[]> {
  return query(`SELECT * FROM w.${table}`, { duckdb: path.join(ws.out, 'w.duckdb') });
}

/** A sink block for `sinks:` (YAML, indented as a list item). */
function sinks(db: string, table: string, key: string[]): string {
  const pk = `[${key.join(', ')}]`;
  return [
    'sinks:',
    `  - { type: postgres, url: '${live.server.url(db)}', table: ${table}, write: merge, primary_key: ${pk} }`,
    `  - { type: duckdb, path: ../out/w.duckdb, table: ${table}, write: merge, primary_key: ${pk} }`,
    '',
  ].join('\n');
}

function serpPipeline(ws: Workspace, queries: string[], sinkText: string): string {
  return variant(ws, 'serp.yaml', [
    [/queries: \[.*\]/, `queries: [${queries.map((q) => `'${q}'`).join(', ')}]`],
    ['max_pages: 5', 'max_pages: 2'],
    [/\nsink:[\s\S]*$/, `\n${sinkText}`],
  ]);
}

async function runInProcess(file: string): Promise<void> {
  const env = { ...process.env, SLUICE_BASE_URL: live.emu.url, SLUICE_API_KEY: API_KEY };
  await runPipeline(await loadPipeline(file, env), quiet);
}

/** The clean SERP crawl, less the values that differ between correct runs. */
let cleanSerp: Digest;
/** SERP values of the fetch, not of the results: they differ between correct runs. */
const PER_RUN = ['fetched_at', 'request_id'];

describe.skipIf(!hasPostgres())('postgres sink end to end', () => {
  it('a SERP crawl into Postgres and DuckDB in one run, then four shard processes into one table: the same rows', async () => {
    const ws = workspace();
    const db = await database();
    const key = ['query', 'link'];
    await runInProcess(ws.write('serp-both.yaml', serpPipeline(ws, QUERIES, sinks(db, 'serp', key))));
    const pgTable = await pgRows(db, 'serp');
    const both = digest(pgTable, key);
    expect(both.rows).toBeGreaterThan(50);
    expect(both).toEqual(digest(await duckRows(ws, 'serp'), key));

    // Four processes at once, each with its own state (as on four machines), all into one table. CI only
    // (SLUICE_CRASH_MATRIX=full): in `npm test`, shards-scale-out.test.ts loads four shard processes into one table.
    if (process.env.SLUICE_CRASH_MATRIX !== 'full') return;
    const shardDb = await database();
    const sink = `sink: { type: postgres, url: '${live.server.url(shardDb)}', table: serp, write: merge, primary_key: [query, link] }\n`;
    const runs = [0, 1, 2, 3].map((i) => {
      const shardWs = workspace();
      const file = shardWs.write('serp-shard.yaml', serpPipeline(shardWs, QUERIES, sink));
      return sluice(['run', file, '--no-progress', '--shard', `${i}/4`], { service: live.emu });
    });
    for (const r of await Promise.all(runs)) {
      expect(r.code, r.stderr).toBe(0);
      // Their URL carries the password: no line of theirs does.
      expect(r.stderr + r.stdout).not.toContain(PG_PASSWORD);
    }
    const units = await live.server.query(shardDb, 'SELECT count(*)::int AS n FROM _sluice_state');
    expect(units[0]!.n).toBeGreaterThan(4);
    cleanSerp = digest(pgTable, key, PER_RUN);
    expect(digest(await pgRows(shardDb, 'serp'), key, PER_RUN)).toEqual(cleanSerp);
  });
});
