/**
 * Resuming a snapshot run that did not finish: the rerun of the same command downloads only the parts that did not
 * commit, starts no second filter job, and the outputs end with every record exactly once. A recording proxy in
 * front of the emulator gives per-part download counts and makes the first run fail (or kills it) on cue. The run
 * killed with -9 is a process of its own; the other commands run the CLI in this process (sluiceInProcess).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedOrganicLinks, serpQueryPlan } from '../../src/emulator/data/serp.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import {
  emulator,
  failure,
  query,
  recordingProxy,
  runOkInProcess,
  sluice,
  sluiceInProcess,
  snapshots,
  variant,
  workspace,
  type Proxy,
  type Seen,
} from './harness.js';

// Four parts, two at a time: the first run's failure (part 3) and kill (at part 4) fall with parts committed before
// them and a part still to read after them, as with more parts, at less data per run.
const PARTS = 4;
const RECORDS = 3500; // records_limit: four parts of 1000, the last one half full

let emu: EmulatorHandle;
let proxy: Proxy;
beforeAll(async () => {
  emu = await emulator({ seed: 11, size: 6000 });
  proxy = await recordingProxy(emu);
});
afterAll(async () => {
  await proxy?.close();
  await emu?.close();
});

function pipelineText(name: string): string {
  return `version: 1
name: ${name}
service:
  base_url: \${SLUICE_BASE_URL:?}
  api_key: \${SLUICE_API_KEY:?}
  retry: { retries: 1, base_delay_ms: 10 }
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>', value: 0 }
  records_limit: ${RECORDS}
  download: { format: jsonl, compress: true, batch_size: 1000 }
  concurrency: 2
  poll: { interval_ms: 50 }
transforms:
  - { type: normalize, preset: company_profile }
sinks:
  - { type: duckdb, path: out/${name}.duckdb, table: companies, write: append }
  - { type: jsonl, path: out/${name}_jsonl }
  - { type: parquet, path: out/${name}_parquet }
`;
}

const isDownload = (r: Seen): boolean => r.method === 'GET' && /\/datasets\/snapshots\/[^/]+\/download$/.test(r.path);

/** Download requests per part number among `seen`. */
function downloadsPerPart(seen: Seen[]): Map<number, number> {
  const n = new Map<number, number>();
  for (const r of seen.filter(isDownload)) {
    const part = Number(r.query.get('part'));
    n.set(part, (n.get(part) ?? 0) + 1);
  }
  return n;
}

function partOf(unitId: string): number {
  const m = /:part:(\d+)$/.exec(unitId);
  if (!m) throw new Error(`not a snapshot part unit: ${unitId}`);
  return Number(m[1]);
}

/** Parts listed in a file sink's manifest. */
function manifestParts(dir: string): number[] {
  try {
    const manifest = JSON.parse(readFileSync(path.join(dir, '_sluice_manifest.json'), 'utf8')) as {
      units: Record<string, unknown>;
    };
    return Object.keys(manifest.units).map(partOf).sort();
  } catch {
    return []; // no unit committed yet: no manifest
  }
}

/** Parts committed by each sink: DuckDB's `_sluice_state` rows, the file sinks' manifests. */
async function committed(dir: string, name: string): Promise<{ duckdb: number[]; jsonl: number[]; parquet: number[] }> {
  const rows = await query(`SELECT unit_id FROM w._sluice_state WHERE table_name = 'companies'`, {
    duckdb: path.join(dir, `out/${name}.duckdb`),
  }).catch(() => []);
  return {
    duckdb: rows.map((r) => partOf(r.unit_id as string)).sort(),
    jsonl: manifestParts(path.join(dir, `out/${name}_jsonl`)),
    parquet: manifestParts(path.join(dir, `out/${name}_parquet`)),
  };
}

async function assertExactlyOnce(dir: string, name: string): Promise<void> {
  const [db] = await query(`SELECT count(*) n, count(DISTINCT company_id) ids FROM w.companies`, {
    duckdb: path.join(dir, `out/${name}.duckdb`),
  });
  expect(db).toEqual({ n: RECORDS, ids: RECORDS });
  const [jsonl] = await query(
    `SELECT count(*) n, count(DISTINCT company_id) ids FROM read_json('${dir}/out/${name}_jsonl/*.jsonl')`,
  );
  expect(jsonl).toEqual({ n: RECORDS, ids: RECORDS });
  const [parquet] = await query(
    `SELECT count(*) n, count(DISTINCT company_id) ids FROM read_parquet('${dir}/out/${name}_parquet/**/*.parquet')`,
  );
  expect(parquet).toEqual({ n: RECORDS, ids: RECORDS });
}

const all = Array.from({ length: PARTS }, (_, i) => i + 1);

describe('resume after a failed run', () => {
  it('re-downloads only the parts that did not commit, with no second filter job', async () => {
    const ws = workspace();
    const name = 'resume_failed';
    const file = ws.write(`${name}.yaml`, pipelineText(name));
    const filtersBefore = emu.stats.paid.filter ?? 0;
    const snapsBefore = (await snapshots(emu)).length;

    // Part 3 answers 500 on every attempt of the first run: its unit fails after its retries, the run fails.
    proxy.intercept = (r, res) => {
      if (!isDownload(r) || r.query.get('part') !== '3') return false;
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'Internal error.' }));
      return true;
    };
    const start1 = proxy.seen.length;
    const first = await sluiceInProcess(['run', file, '--no-progress'], { service: proxy });
    proxy.intercept = undefined;
    expect(first.code, first.stderr).toBe(1);
    const f = failure(first);
    expect(f.error).toMatch(/^error: GET \/datasets\/snapshots\/snap_\w+\/download: 500: Internal error\.$/);
    expect(f.fix).toMatch(/^fix: /);
    expect(downloadsPerPart(proxy.seen.slice(start1)).get(3)).toBeGreaterThan(1); // it was retried

    const after1 = await committed(ws.pipelines, name);
    expect(after1.duckdb).not.toContain(3);
    expect(after1.jsonl).toEqual(after1.duckdb);
    expect(after1.parquet).toEqual(after1.duckdb);
    expect(after1.duckdb.length).toBeGreaterThan(0);
    expect(emu.stats.paid.filter).toBe(filtersBefore + 1);

    // `plan` between the runs shows the parts of the checkpointed snapshot and pays for nothing.
    const plan = await sluiceInProcess(['plan', file], { service: proxy });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(new RegExp(`^units: ${PARTS}, about ${RECORDS.toLocaleString('en-US')} records$`, 'm'));
    expect(emu.stats.paid.filter).toBe(filtersBefore + 1);

    const start2 = proxy.seen.length;
    const second = await runOkInProcess(file, proxy);
    expect(second.stderr).toMatch(/reusing snapshot snap_\w+ of the filter job started earlier/);
    expect(second.stdout).toMatch(new RegExp(`units +${PARTS}/${PARTS} \\(${after1.duckdb.length} already committed`));

    const missing = all.filter((p) => !after1.duckdb.includes(p));
    expect(Object.fromEntries(downloadsPerPart(proxy.seen.slice(start2)))).toEqual(
      Object.fromEntries(missing.map((p) => [p, 1])),
    );
    expect(proxy.seen.slice(start2).filter((r) => r.path === '/datasets/filter')).toEqual([]);
    expect(emu.stats.paid.filter).toBe(filtersBefore + 1);
    expect((await snapshots(emu)).length).toBe(snapsBefore + 1);

    expect((await committed(ws.pipelines, name)).duckdb).toEqual(all);
    await assertExactlyOnce(ws.pipelines, name);
  });
});

describe('resume after kill -9', () => {
  it('the rerun completes every part exactly once, reusing the paid filter job', async () => {
    const ws = workspace();
    const name = 'resume_killed';
    const file = ws.write(`${name}.yaml`, pipelineText(name));
    const filtersBefore = emu.stats.paid.filter ?? 0;

    // The process dies the moment it asks for part 4: parts 1–3 are committed or in flight, nothing is cleaned up.
    const first = sluice(['run', file, '--no-progress'], { service: proxy });
    proxy.intercept = (r, res) => {
      if (!isDownload(r) || r.query.get('part') !== '4') return false;
      first.child.kill('SIGKILL');
      res.destroy();
      return true;
    };
    const r1 = await first;
    proxy.intercept = undefined;
    expect(r1.signal).toBe('SIGKILL');

    const after1 = await committed(ws.pipelines, name);
    expect(after1.duckdb).not.toContain(4);
    expect(after1.duckdb.length).toBeGreaterThan(0);

    const start2 = proxy.seen.length;
    await runOkInProcess(file, proxy);
    const again = downloadsPerPart(proxy.seen.slice(start2));
    // Every part some sink had not committed is downloaded once more; parts every sink committed are not.
    for (const p of all) {
      const inAll = [after1.duckdb, after1.jsonl, after1.parquet].every((parts) => parts.includes(p));
      expect(again.get(p) ?? 0, `part ${p}`).toBe(inAll ? 0 : 1);
    }
    expect(emu.stats.paid.filter).toBe(filtersBefore + 1);
    await assertExactlyOnce(ws.pipelines, name);
  });
});

describe('resume of a crawl after a failed run', () => {
  it('fetches only the pages that did not commit, each once, and loads every result once', async () => {
    const ws = workspace();
    const file = ws.write(
      'serp_resume.yaml',
      variant(ws, 'serp.yaml', [
        [/api_key: (.*)\n/, 'api_key: $1\n  retry: { retries: 1, base_delay_ms: 10 }\n'],
        [/write: merge\n.*primary_key.*\n/, 'write: append\n'], // a page loaded twice would show as duplicates
      ]),
    );
    const queries = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon'];
    const pageOf = (r: Seen): string | undefined => {
      if (r.path !== '/request') return undefined;
      const target = new URL((JSON.parse(r.body) as { url: string }).url);
      return `${target.searchParams.get('q')}@${target.searchParams.get('start') ?? 0}`;
    };
    const unitPage = (unitId: string): string => {
      const m = /serp:[^:]+:(.+):start:(\d+)$/.exec(unitId);
      if (!m) throw new Error(`not a SERP page unit: ${unitId}`);
      return `${decodeURIComponent(m[1]!)}@${m[2]}`;
    };
    const committedPages = async (): Promise<string[]> =>
      (
        await query(`SELECT unit_id FROM w._sluice_state WHERE table_name = 'serp_organic'`, {
          duckdb: path.join(ws.out, 'warehouse.duckdb'),
        })
      )
        .map((x) => unitPage(x.unit_id as string))
        .sort();

    // Page 2 of the first query fails on every attempt of the first run.
    proxy.intercept = (r, res) => {
      if (pageOf(r) !== 'coffee roasters portland@10') return false;
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'Bad gateway' }));
      return true;
    };
    const first = await sluiceInProcess(['run', file, '--no-progress'], { service: proxy });
    proxy.intercept = undefined;
    expect(first.code, first.stderr).toBe(1);
    expect(failure(first).error).toMatch(/^error: POST \/request: 502/);
    const after1 = await committedPages();
    expect(after1).toContain('coffee roasters portland@0');
    expect(after1).not.toContain('coffee roasters portland@10');

    const start2 = proxy.seen.length;
    await runOkInProcess(file, proxy);
    const fetched = proxy.seen
      .slice(start2)
      .map(pageOf)
      .filter((x) => x !== undefined);
    const final = await committedPages();
    expect(final).toContain('coffee roasters portland@40'); // page 5: the crawl went on past the failed page
    expect(fetched.sort()).toEqual(final.filter((pg) => !after1.includes(pg)));

    const expected = queries.flatMap((q) =>
      expectedOrganicLinks(11, 'www.google.com', q)
        .slice(0, 5 * serpQueryPlan(11, 'www.google.com', q).pageSize)
        .map((link) => `${q} ${link}`),
    );
    const rows = await query(`SELECT query, link FROM w.serp_organic`, {
      duckdb: path.join(ws.out, 'warehouse.duckdb'),
    });
    expect(rows.map((x) => `${x.query} ${x.link}`).sort()).toEqual(expected.sort());
  });
});
