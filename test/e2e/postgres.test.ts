/**
 * The postgres sink end to end, against a throwaway cluster (test/support/postgres-server.ts) and the emulator:
 *
 * - a snapshot and a SERP crawl each into Postgres AND DuckDB in one run: the two tables hold the same rows (count,
 *   distinct keys, a checksum over every value);
 * - four `--shard i/4` processes loading one table at once give the single run's table;
 * - `sluice run` of the shipped example killed with -9 mid-COPY, before a unit's commit and after one, then run
 *   again: nothing partial visible after the kill, and the rerun gives the clean run's table, the filter job paid once.
 *
 * The server restarted at every point of a run: postgres-restart.test.ts.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/engine/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { digest, type Digest } from '../support/compare-tables.js';
import { PG_PASSWORD } from '../support/postgres-server.js';
import { API_KEY, query, sluice, variant, workspace, type Obj, type Workspace } from './harness.js';
import { postgresAndEmulator } from './postgres-fixture.js';

const live = postgresAndEmulator();

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const EXAMPLE = 'company_profiles_postgres.yaml';
/** The shipped example's source, polling the filter job often (the emulator's job is ready in moments). */
const FAST_POLL: [string, string] = ['batch_size: 1000 }', 'batch_size: 1000 }\n  poll: { interval_ms: 50 }'];
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

/**
 * `sluice run` of the example killed at `failpoint`, checked right after the kill, then run again: the shipped file
 * as it is, or polling faster.
 */
async function crashCell(failpoint: string, shipped: boolean): Promise<void> {
  const ws = workspace();
  const db = await database();
  const env = { DATABASE_URL: live.server.url(db) };
  const file = shipped ? ws.pipeline(EXAMPLE) : ws.write('crash.yaml', variant(ws, EXAMPLE, [FAST_POLL]));
  const killed = await sluice(['run', file, '--no-progress'], {
    service: live.emu,
    env: { ...env, SLUICE_FAILPOINTS: failpoint },
  });
  expect(killed.signal, `${failpoint}: ${killed.stderr}`).toBe('SIGKILL');
  expect(killed.stderr).toContain(`failpoint ${failpoint.split('=')[0]} reached`);
  // Right after the kill: the table holds exactly the rows its committed units account for.
  const [seen] = await live.server.query(
    db,
    `SELECT (SELECT count(*) FROM company_profiles)::int AS rows,
            (SELECT coalesce(sum(records), 0) FROM _sluice_state)::int AS committed`,
  );
  expect(seen!.rows, failpoint).toBe(seen!.committed);
  expect(seen!.rows, failpoint).toBeLessThan(cleanProfiles.rows);

  const rerun = await sluice(['run', file, '--no-progress'], { service: live.emu, env });
  expect(rerun.code, `${failpoint}: ${rerun.stderr}`).toBe(0);
  expect(rerun.stderr, 'the rerun resumes the killed run’s filter job').not.toMatch(/filter job started: snapshot/);
  expect(digest(await pgRows(db, 'company_profiles'), ['company_id']), failpoint).toEqual(cleanProfiles);
  expect(killed.stderr + rerun.stderr).not.toContain(PG_PASSWORD);
}

/** The clean run of the shipped example's source, into Postgres and DuckDB at once. */
let cleanProfiles: Digest;
/** The clean SERP crawl, less the values that differ between correct runs. */
let cleanSerp: Digest;
/** SERP values of the fetch, not of the results: they differ between correct runs. */
const PER_RUN = ['fetched_at', 'request_id'];

describe('postgres sink end to end', () => {
  it('a snapshot into Postgres and DuckDB in one run: the same rows, keys and values', async () => {
    const ws = workspace();
    const db = await database();
    const file = ws.write(
      'both.yaml',
      variant(ws, EXAMPLE, [FAST_POLL, [/\nsink:[\s\S]*$/, `\n${sinks(db, 'company_profiles', ['company_id'])}`]]),
    );
    await runInProcess(file);
    const pg = digest(await pgRows(db, 'company_profiles'), ['company_id']);
    const duck = digest(await duckRows(ws, 'company_profiles'), ['company_id']);
    expect(pg.rows).toBeGreaterThan(1000);
    expect(pg.keys).toBe(pg.rows);
    expect(pg).toEqual(duck);
    cleanProfiles = pg;
  });

  it('a SERP crawl into Postgres and DuckDB in one run, then four shard processes into one table: the same rows', async () => {
    const ws = workspace();
    const db = await database();
    const key = ['query', 'link'];
    await runInProcess(ws.write('serp-both.yaml', serpPipeline(ws, QUERIES, sinks(db, 'serp', key))));
    const pgTable = await pgRows(db, 'serp');
    const both = digest(pgTable, key);
    expect(both.rows).toBeGreaterThan(50);
    expect(both).toEqual(digest(await duckRows(ws, 'serp'), key));

    // Four processes at once, each with its own state (as on four machines), all into one table.
    const shardDb = await database();
    const sink = `sink: { type: postgres, url: '${live.server.url(shardDb)}', table: serp, write: merge, primary_key: [query, link] }\n`;
    const runs = [0, 1, 2, 3].map((i) => {
      const shardWs = workspace();
      const file = shardWs.write('serp-shard.yaml', serpPipeline(shardWs, QUERIES, sink));
      return sluice(['run', file, '--no-progress', '--shard', `${i}/4`], { service: live.emu });
    });
    for (const r of await Promise.all(runs)) expect(r.code, r.stderr).toBe(0);
    const units = await live.server.query(shardDb, 'SELECT count(*)::int AS n FROM _sluice_state');
    expect(units[0]!.n).toBeGreaterThan(4);
    cleanSerp = digest(pgTable, key, PER_RUN);
    expect(digest(await pgRows(shardDb, 'serp'), key, PER_RUN)).toEqual(cleanSerp);
  });

  it('the example killed with -9 mid-COPY, before a unit’s COMMIT and after one: nothing partial visible; the rerun gives the clean table, paid once', async () => {
    expect(cleanProfiles, 'the clean run ran first').toBeDefined();
    const paid = live.emu.stats.paid.filter ?? 0;
    // The three cells at once (each with its own database and state): most of a run is waiting on the service.
    // `npm test` kills mid-COPY; CI (SLUICE_CRASH_MATRIX=full) also before a unit's COMMIT and right after one.
    const failpoints =
      process.env.SLUICE_CRASH_MATRIX === 'full'
        ? ['postgres:mid-copy=300000', 'postgres:after-data=2', 'engine:after-commit=1']
        : ['postgres:mid-copy=300000'];
    await Promise.all(failpoints.map((failpoint, i) => crashCell(failpoint, i === 0)));
    expect((live.emu.stats.paid.filter ?? 0) - paid, 'one filter job per crashed run and its rerun').toBe(
      failpoints.length,
    );
  });
});
