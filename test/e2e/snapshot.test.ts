/**
 * Snapshot pipelines end to end: a filter with uploaded CSV and JSON value files, and a snapshot of several parts
 * downloaded concurrently in each download format, fanned out to two sinks. The CLI runs in this process
 * (sluiceInProcess): nothing here needs a process of its own.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, query, runOkInProcess, snapshots, variant, workspace, type Obj } from './harness.js';

const SEED = 7;
const SIZE = 6000;

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator({ seed: SEED, size: SIZE });
});
afterAll(() => emu?.close());

function profilesWhere(keep: (p: Obj) => boolean): Obj[] {
  const out: Obj[] = [];
  for (let i = 0; i < SIZE; i++) {
    const p = companyProfile(SEED, i);
    if (keep(p)) out.push(p);
  }
  return out;
}

async function snapshotOf(stderr: string): Promise<Obj> {
  const id = /filter job started: snapshot (\S+)/.exec(stderr)?.[1];
  expect(id, stderr).toBeDefined();
  return (await snapshots(emu)).find((s) => s.id === id)!;
}

const SERVICE = 'service: { base_url: "${SLUICE_BASE_URL:?}", api_key: "${SLUICE_API_KEY:?}" }';

describe('snapshot filter with uploaded value files', () => {
  it('loads exactly the records whose values are listed in the CSV and JSON files beside the pipeline', async () => {
    const ws = workspace();
    const countries = ['DE', 'FR', 'JP', 'BR'];
    const industries = ['Software Development', 'Retail', 'Insurance', 'Higher Education'];
    ws.write('countries.csv', ['country_code', ...countries, ''].join('\n'));
    ws.write('industries.json', JSON.stringify(industries.map((i) => ({ industries: i }))));
    const file = ws.write(
      'filter_files.yaml',
      `version: 1
name: filter_files
${SERVICE}
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter:
    operator: and
    filters:
      - { name: country_code, operator: in, value: countries.csv }
      - { name: industries, operator: in, value: industries.json }
  files: [countries.csv, industries.json]
  records_limit: 100000
  download: { format: jsonl, compress: true, batch_size: 1000 }
  concurrency: 2
  poll: { interval_ms: 50 }
sink: { type: duckdb, path: out/filtered.duckdb, table: companies }
`,
    );
    const r = await runOkInProcess(file, emu);
    const snap = await snapshotOf(r.stderr);
    const expected = profilesWhere((p) => countries.includes(p.country_code) && industries.includes(p.industries));
    expect(expected.length).toBeGreaterThan(50);
    expect(snap.dataset_size).toBe(expected.length);

    const rows = await query(`SELECT company_id, country_code, industries, followers FROM w.companies`, {
      duckdb: path.join(ws.pipelines, 'out/filtered.duckdb'),
    });
    expect(rows).toHaveLength(expected.length);
    for (const row of rows) {
      expect(countries).toContain(row.country_code);
      expect(industries).toContain(row.industries);
    }
    const byId = new Map(expected.map((p) => [p.company_id, p]));
    expect(new Set(rows.map((x) => x.company_id))).toEqual(new Set(byId.keys()));
    for (const row of rows) expect(row.followers).toBe(byId.get(row.company_id)!.followers);
  });
});

describe('a snapshot of several parts downloaded concurrently', () => {
  // The JSON array format in CI (SLUICE_CRASH_MATRIX=full): its decoder is proved against an oracle in
  // test/decode/json-array-oracle.test.ts.
  const formats =
    process.env.SLUICE_CRASH_MATRIX === 'full' ? (['jsonl', 'json', 'csv'] as const) : (['jsonl', 'csv'] as const);
  for (const format of formats) {
    it(`gives exactly dataset_size rows with distinct keys (${format}, gzip, 4 at once, duckdb + jsonl sinks)`, async () => {
      const ws = workspace();
      const file = ws.write(
        `parts_${format}.yaml`,
        `version: 1
name: parts_${format}
${SERVICE}
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>', value: 0 }
  records_limit: 4500
  download: { format: ${format}, compress: true, batch_size: 1000 }
  concurrency: 4
  poll: { interval_ms: 50 }
transforms:
  - { type: normalize, preset: company_profile }
sinks:
  - { type: duckdb, path: out/parts.duckdb, table: companies, write: append }
  - { type: jsonl, path: out/parts_jsonl }
`,
      );
      const before = emu.stats.routes['GET /datasets/snapshots/:id/download'] ?? 0;
      const r = await runOkInProcess(file, emu);
      const snap = await snapshotOf(r.stderr);
      expect(snap.dataset_size).toBe(4500); // records_limit: 5 parts, the last one half full
      expect(emu.stats.routes['GET /datasets/snapshots/:id/download']! - before).toBe(5);

      const [db] = await query(`SELECT count(*) n, count(DISTINCT company_id) ids FROM w.companies`, {
        duckdb: path.join(ws.pipelines, 'out/parts.duckdb'),
      });
      expect(db).toEqual({ n: 4500, ids: 4500 });
      const [jsonl] = await query(
        `SELECT count(*) n, count(DISTINCT company_id) ids FROM read_json('${ws.pipelines}/out/parts_jsonl/*.jsonl')`,
      );
      expect(jsonl).toEqual({ n: 4500, ids: 4500 });

      // The first 4500 matches in dataset order, with their values intact whatever the wire format.
      const expected = profilesWhere((p) => Number(p.followers) > 0).slice(0, 4500);
      const rows = await query(`SELECT company_id, followers, founded, name FROM w.companies`, {
        duckdb: path.join(ws.pipelines, 'out/parts.duckdb'),
      });
      const byId = new Map(rows.map((x) => [x.company_id, x]));
      for (const p of expected) {
        const row = byId.get(p.company_id);
        expect(row, `company ${p.company_id}`).toBeDefined();
        expect([row!.followers, row!.founded ?? null, row!.name]).toEqual([p.followers, p.founded ?? null, p.name]);
      }
    });
  }

  it('had downloads in flight at the same time', () => {
    expect(emu.stats.routeMaxInFlight['GET /datasets/snapshots/:id/download']).toBeGreaterThan(1);
  });
});

describe('a filter that matches nothing', () => {
  it('is an empty result, not a failure: exit 0, no units, a warning that says why', async () => {
    const ws = workspace();
    const file = ws.write(
      'no_match.yaml',
      variant(ws, 'company_profiles.yaml', [
        ["{ name: followers, operator: '>=', value: 100 }", "{ name: followers, operator: '<', value: 0 }"],
        ['batch_size: 1000 }', 'batch_size: 1000 }\n  poll: { interval_ms: 50 }'],
      ]),
    );
    const paid = emu.stats.paid.filter ?? 0;
    const r = await runOkInProcess(file, emu);
    // The service knows up front (422): no job is started, nothing is charged.
    expect(r.stderr).toMatch(
      /^warn: the service answered 422 "Provided filter did not match any records": nothing to load \(check source\.filter if records were expected\)$/m,
    );
    expect(r.stdout).toMatch(/^ {2}units +0\/0 /m);
    expect(r.stdout).toMatch(/^ {2}records +0$/m);
    expect(emu.stats.paid.filter ?? 0).toBe(paid);
  });
});
