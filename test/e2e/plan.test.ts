/**
 * `sluice plan` on every example against a live emulator: it prints units, requests and targets, and the emulator's
 * counters prove it started no paid work (no filter job, no trigger, no enrich) and wrote no output. The CLI runs in
 * this process (sluiceInProcess): nothing here needs a process of its own.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, ROOT, sluiceInProcess, workspace, type Workspace } from './harness.js';

let emu: EmulatorHandle;
let ws: Workspace;
beforeAll(async () => {
  emu = await emulator({ seed: 4 });
  ws = workspace();
});
afterAll(() => emu?.close());

const PAID_ROUTES = [
  'POST /datasets/filter',
  'POST /datasets/deep_lookup/v1/trigger',
  'POST /datasets/deep_lookup/v1/request/:id/enrich',
  'POST /zone',
  'POST /zone/ips/refresh',
  'DELETE /zone/domain_perm',
];

/** The sections of a plan's text output. */
function sections(stdout: string): { head: string; units: string; requests: string[]; targets: string[] } {
  const lines = stdout.trimEnd().split('\n');
  const block = (name: string): string[] => {
    const i = lines.findIndex((l) => l.startsWith(`${name}:`));
    if (i < 0) return [];
    const out: string[] = [];
    for (const l of lines.slice(i + 1)) {
      if (!l.startsWith('  ')) break;
      out.push(l.trim());
    }
    return out;
  };
  return {
    head: lines[0] ?? '',
    units: lines.find((l) => l.startsWith('units: ')) ?? '',
    requests: block('requests'),
    targets: block('targets'),
  };
}

describe('sluice plan', () => {
  // The examples whose runs pay (filter job, trigger, enrich) or crawl; the others make one free call when run.
  const expectedRequests: Record<string, string[] | undefined> = {
    'company_profiles.yaml': ['POST /datasets/filter (paid: would start a filter job on gd_l1vikfnt1wgvvqz95w)'],
    'snapshot_to_parquet.yaml': ['POST /datasets/filter (paid: would start a filter job on gd_l1vikfnt1wgvvqz95w)'],
    'deep_lookup.yaml': [
      'POST /datasets/deep_lookup/v1/trigger (paid, up to $42.00: not made by plan)',
      'POST …/request/<id>/enrich ceo_name (paid, up to $2.00: not made by plan)',
    ],
    'serp.yaml': undefined,
    'reviews.yaml': undefined,
  };

  it('covers every example that pays or crawls', () => {
    const examples = readdirSync(path.join(ROOT, 'pipelines'));
    for (const name of Object.keys(expectedRequests)) expect(examples).toContain(name);
  });

  it.each(Object.keys(expectedRequests))(
    '%s: units, requests and targets; nothing paid, nothing written',
    async (name) => {
      const r = await sluiceInProcess(['plan', ws.pipeline(name)], { service: emu });
      expect(r.code, r.stderr).toBe(0);
      const s = sections(r.stdout);
      expect(s.head).toMatch(/^plan: \w+ \(source \w+\)$/);
      expect(s.units).toMatch(/^units: \d+/);
      expect(r.stdout).toMatch(/^requests:/m);
      expect(s.requests.length).toBeGreaterThan(0);
      const paidRequests = expectedRequests[name];
      if (paidRequests) {
        expect(s.units).toBe('units: 0'); // the units are the parts of a job plan does not start
        expect(s.requests).toEqual(paidRequests);
      }
      expect(s.targets.length).toBeGreaterThan(0);
      // `path: ../out/…` in the pipeline, shown from the current directory (absolute here: outside it).
      for (const t of s.targets) expect(t).toMatch(new RegExp(`^(duckdb|parquet|jsonl) ${ws.out}/`));
      expect(emu.stats.paid).toEqual({});
      for (const route of PAID_ROUTES) expect(emu.stats.routes[route], route).toBeUndefined();
      expect(existsSync(ws.out), 'plan wrote no output').toBe(false);
    },
  );

  it('lists the units of a crawl as JSON with --json', async () => {
    const r = await sluiceInProcess(['plan', ws.pipeline('serp.yaml'), '--json'], { service: emu });
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as {
      source: string;
      units: { id: string }[];
      requests: string[];
      targets: string[];
    };
    expect(plan.source).toBe('serp');
    expect(plan.units.map((u) => u.id)).toEqual([
      'serp:www.google.com:coffee%20roasters%20portland:start:0',
      'serp:www.google.com:ramen%20berlin:start:0',
      'serp:www.google.com:bike%20repair%20lyon:start:0',
    ]);
    expect(plan.requests).toHaveLength(3);
    expect(plan.targets).toEqual([`duckdb ${path.join(ws.out, 'warehouse.duckdb')} table serp_organic`]);
    // Planning a crawl reads no page: the first pages are known from the queries.
    expect(emu.stats.routes['POST /request']).toBeUndefined();
  });
});
