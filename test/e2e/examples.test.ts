/**
 * Every example pipeline in pipelines/ runs as shipped (`sluice run`, through the CLI's own entry in this process; the
 * `--show` run as a child process of the shipped bin) against an emulator this test started, and its output holds
 * exactly the rows the emulator's data says it should.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { JOB_LISTINGS_ID, jobListing } from '../../src/emulator/data/job-listings.js';
import { expectedReviewIds } from '../../src/emulator/data/reviews.js';
import { expectedOrganicLinks, knowledgeFid, serpQueryPlan } from '../../src/emulator/data/serp.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import {
  api,
  API_KEY,
  emulator,
  query,
  ROOT,
  runInProcess,
  runOk,
  snapshots,
  workspace,
  type Obj,
  type Workspace,
} from './harness.js';

const SEED = 1;
const SIZE = 4000;
const ENGINE = 'www.google.com';

let emu: EmulatorHandle;
let ws: Workspace;
let warehouse: string;

beforeAll(async () => {
  emu = await emulator({ seed: SEED, size: SIZE, timeScale: 500 });
  ws = workspace();
  warehouse = path.join(ws.out, 'warehouse.duckdb');
});
afterAll(() => emu?.close());

/** The snapshot a run's filter job created, as the emulator reports it. */
async function snapshotOf(stderr: string): Promise<Obj> {
  const id = /filter job started: snapshot (\S+)/.exec(stderr)?.[1];
  expect(id, stderr).toBeDefined();
  const meta = (await snapshots(emu)).find((s) => s.id === id);
  expect(meta?.status).toBe('ready');
  return meta!;
}

/** Company profiles of the emulator's dataset that satisfy `keep`, computed from the generator, not the filter. */
function profilesWhere(keep: (p: Obj) => boolean): Obj[] {
  const out: Obj[] = [];
  for (let i = 0; i < SIZE; i++) {
    const p = companyProfile(SEED, i);
    if (keep(p)) out.push(p);
  }
  return out;
}

function yamlQueries(file: string, key: string): string[] {
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.includes(`${key}:`));
  return [...(line ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]!);
}

const checks: Record<string, () => Promise<void>> = {
  'company_profiles.yaml': async () => {
    const r = await runInProcess(ws.pipeline('company_profiles.yaml'), emu);
    const snap = await snapshotOf(r.stderr);
    const countries = readFileSync(ws.pipeline('filters/countries.csv'), 'utf8').trim().split('\n').slice(1);
    const expected = profilesWhere((p) => countries.includes(p.country_code) && Number(p.followers) >= 100);
    expect(snap.dataset_size).toBe(expected.length);
    expect(snap.dataset_size).toBeGreaterThan(1000); // several parts of 1000
    const [row] = await query(
      `SELECT count(*) n, count(DISTINCT company_id) ids, min(followers) min_followers,
              count(*) FILTER (WHERE country_code NOT IN (${countries.map((c) => `'${c}'`).join(',')})) foreign_rows
       FROM w.company_profiles`,
      { duckdb: warehouse },
    );
    expect(row).toEqual({
      n: expected.length,
      ids: expected.length,
      min_followers: expect.any(Number),
      foreign_rows: 0,
    });
    expect(row!.min_followers).toBeGreaterThanOrEqual(100);
    const ids = await query(`SELECT company_id FROM w.company_profiles`, { duckdb: warehouse });
    expect(new Set(ids.map((x) => x.company_id))).toEqual(new Set(expected.map((p) => p.company_id)));
  },

  'countries.yaml': async () => {
    await runInProcess(ws.pipeline('countries.yaml'), emu);
    const answer = (await api(emu, 'GET', '/countrieslist')) as {
      zone_types: Record<string, { country_codes: string[] }>;
    };
    const expected = Object.entries(answer.zone_types)
      .flatMap(([t, v]) => v.country_codes.map((c) => `${t}/${c}`))
      .sort();
    const rows = await query(`SELECT zone_type, country_code FROM w.zone_countries`, { duckdb: warehouse });
    expect(rows.map((x) => `${x.zone_type}/${x.country_code}`).sort()).toEqual(expected);
  },

  'datasets.yaml': async () => {
    await runInProcess(ws.pipeline('datasets.yaml'), emu);
    const answer = (await api(emu, 'GET', '/datasets/list')) as Obj[];
    const rows = await query(`SELECT id, name, size FROM w.datasets ORDER BY id`, { duckdb: warehouse });
    // The source trims the stray spaces the service's names carry.
    const expected = answer.map((d) => ({ id: d.id, name: d.name.trim(), size: d.size }));
    expect(rows).toEqual(expected.sort((a, b) => (a.id < b.id ? -1 : 1)));
  },

  'deep_lookup.yaml': async () => {
    const r = await runInProcess(ws.pipeline('deep_lookup.yaml'), emu);
    const id = /deep lookup request (ai_\w+) triggered/.exec(r.stderr)?.[1];
    expect(id, r.stderr).toBeDefined();
    const request = (await api(emu, 'GET', `/datasets/deep_lookup/v1/request/${id}`)) as Obj;
    expect(request.status).toBe('completed');
    expect(request.matched_records).toBeGreaterThan(0);
    expect(request.matched_records).toBeLessThanOrEqual(40); // result_limit
    const rows = await query(`SELECT company_name, ceo_name FROM read_json('${ws.out}/deep_lookup/*.jsonl')`);
    // The enriched column as the service holds it (a CEO it could not find is null there too).
    const data = request.data as Obj[];
    expect(data).toHaveLength(request.matched_records);
    expect(data.filter((d) => typeof d.ceo_name === 'string').length).toBeGreaterThan(data.length / 2);
    const key = (x: Obj): string => `${x.company_name} ${x.ceo_name ?? null}`;
    expect(rows.map(key).sort()).toEqual(data.map(key).sort());
  },

  'file.yaml': async () => {
    await runInProcess(ws.pipeline('file.yaml'), undefined);
    const lines = readFileSync(ws.pipeline('data/sample.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim());
    const first = JSON.parse(lines[0]!) as Obj;
    const rows = await query(`SELECT * FROM read_parquet('${ws.out}/local_files/**/*.parquet')`);
    expect(rows).toHaveLength(lines.length);
    // max_depth 2 turns a nested object into parent__child columns.
    const nested = Object.entries(first).find(([, v]) => v !== null && typeof v === 'object' && !Array.isArray(v));
    expect(nested, 'sample.jsonl has a nested object').toBeDefined();
    const [key, value] = nested!;
    const child = Object.keys(value as Obj)[0]!;
    expect(Object.keys(rows[0]!)).toContain(`${key}__${child}`);
    expect(Object.keys(rows[0]!)).not.toContain(key);
  },

  'job_listings.yaml': async () => {
    const metadataCalls = emu.stats.routes['GET /datasets/:id/metadata'] ?? 0;
    const r = await runInProcess(ws.pipeline('job_listings.yaml'), emu);
    // The dataset publishes no metadata (404, as most of the service's): the run went on, its id found in the list.
    expect(emu.stats.routes['GET /datasets/:id/metadata']).toBe(metadataCalls + 1);
    await expect(api(emu, 'GET', `/datasets/${JOB_LISTINGS_ID}/metadata`)).rejects.toThrow(/404/);
    const snap = await snapshotOf(r.stderr);
    const expected: Obj[] = [];
    for (let i = 0; i < SIZE && expected.length < 2000; i++) {
      const j = jobListing(SEED, i);
      if (j.country_code === 'DE') expected.push(j);
    }
    expect(snap.dataset_size).toBe(expected.length);
    expect(expected.length).toBeGreaterThan(0);
    const rows = await query(`SELECT job_posting_id, country_code FROM read_json('${ws.out}/job_listings/*.jsonl*')`);
    expect(rows.map((x) => x.job_posting_id).sort()).toEqual(expected.map((j) => j.job_posting_id).sort());
  },

  'reviews.yaml': async () => {
    const r = await runInProcess(ws.pipeline('reviews.yaml'), emu);
    const queries = yamlQueries(ws.pipeline('reviews.yaml'), 'from_serp');
    expect(queries.length).toBeGreaterThan(0);
    const fids = [...new Set(queries.map((q) => knowledgeFid(SEED, ENGINE, q)).filter((f) => f !== undefined))];
    // The emulator, like the service since it deprecated start for maps, answers every review page with the place's
    // first: the example reads each place's first page only (max_pages: 1), so no page is billed for nothing. The
    // search pages the places were found on (one per query) are billed too.
    const expected = fids.flatMap((f) => expectedReviewIds(SEED, f).slice(0, 10));
    expect(r.stderr).toMatch(new RegExp(`^reviews: ${queries.length + fids.length} billed page request\\(s\\)$`, 'm'));
    expect(expected.length).toBeGreaterThan(0);
    const rows = await query(`SELECT review_id FROM w.reviews`, { duckdb: warehouse });
    expect(rows.map((x) => x.review_id).sort()).toEqual([...expected].sort());
  },

  'serp.yaml': async () => {
    await runInProcess(ws.pipeline('serp.yaml'), emu);
    const queries = yamlQueries(ws.pipeline('serp.yaml'), 'queries');
    expect(queries).toHaveLength(3);
    const expected = queries.flatMap((q) =>
      expectedOrganicLinks(SEED, ENGINE, q)
        .slice(0, 5 * serpQueryPlan(SEED, ENGINE, q).pageSize) // max_pages 5
        .map((link) => `${q} ${link}`),
    );
    const rows = await query(`SELECT query, link FROM w.serp_organic`, { duckdb: warehouse });
    expect(rows.map((x) => `${x.query} ${x.link}`).sort()).toEqual(expected.sort());
  },

  'snapshot_to_parquet.yaml': async () => {
    const r = await runInProcess(ws.pipeline('snapshot_to_parquet.yaml'), emu);
    const snap = await snapshotOf(r.stderr);
    const expected = profilesWhere((p) => Number(p.followers) > 0).slice(0, 5000); // records_limit
    expect(snap.dataset_size).toBe(expected.length);
    const rows = await query(
      `SELECT company_id, followers, country_code
       FROM read_parquet('${ws.out}/company_profiles_parquet/**/*.parquet', hive_partitioning = true)`,
    );
    expect(rows).toHaveLength(expected.length);
    expect(new Set(rows.map((x) => x.company_id))).toEqual(new Set(expected.map((p) => p.company_id)));
    const byId = new Map(expected.map((p) => [p.company_id, p]));
    for (const row of rows) expect(row.country_code).toBe(byId.get(row.company_id)?.country_code);
    expect(rows.every((x) => Number(x.followers) > 0)).toBe(true);
  },

  'zone_cost.yaml': async () => {
    await runInProcess(ws.pipeline('zone_cost.yaml'), emu);
    const answer = (await api(emu, 'GET', '/zone/cost?zone=serp_zone')) as Record<string, Record<string, Obj>>;
    const buckets = Object.values(answer).flatMap((zone) => Object.keys(zone));
    const rows = await query(`SELECT * FROM read_json('${ws.out}/zone_cost/*.jsonl')`);
    expect(rows).toHaveLength(buckets.length);
    expect(buckets).toHaveLength(6);
  },
};

describe('example pipelines, run as shipped', () => {
  it('has a check for every example in pipelines/', () => {
    // The Postgres and ClickHouse examples need a server: test/e2e/postgres.test.ts and clickhouse.test.ts run them
    // as shipped against one.
    const examples = readdirSync(path.join(ROOT, 'pipelines')).filter(
      (f) => f.endsWith('.yaml') && f !== 'company_profiles_postgres.yaml' && f !== 'company_profiles_clickhouse.yaml',
    );
    expect(Object.keys(checks).sort()).toEqual(examples.sort());
  });

  for (const [name, check] of Object.entries(checks)) it(`${name} exits 0 with the expected rows`, check);

  it('company_profiles.yaml the next night: a new run with a new filter job; merge keeps one row per company', async () => {
    const count = `SELECT count(*) n, count(DISTINCT company_id) ids FROM w.company_profiles`;
    const [before] = await query(count, { duckdb: warehouse });
    expect(before!.n).toBeGreaterThan(0); // the run above
    const filters = emu.stats.paid.filter ?? 0;
    const r = await runOk(ws.pipeline('company_profiles.yaml'), emu, '--show', '3');
    expect(r.stderr).toMatch(/^starting company_profiles_nightly/m);
    expect(emu.stats.paid.filter).toBe(filters + 1);
    expect(await query(count, { duckdb: warehouse })).toEqual([before]);
    // --show: the first rows of the output after the summary.
    const shown = r.stdout.split('\n').filter((l) => l.startsWith('{'));
    expect(shown).toHaveLength(3);
    expect(JSON.parse(shown[0]!)).toHaveProperty('company_id');
  });

  it('wrote the API key into no file: outputs, state, dead letters, temporary files', () => {
    const files = (readdirSync(ws.dir, { recursive: true }) as string[])
      .map((f) => path.join(ws.dir, f))
      .filter((f) => statSync(f).isFile());
    expect(files.length).toBeGreaterThan(20);
    const key = Buffer.from(API_KEY);
    expect(files.filter((f) => readFileSync(f).includes(key))).toEqual([]);
  });
});
