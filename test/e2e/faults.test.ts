/**
 * A flaky service: the emulator injects 429s, 5xx, dropped connections, truncated gzip and bodies cut short into
 * downloads and crawl requests. The runs still succeed, and every record lands exactly once. The CLI runs in this
 * process (sluiceInProcess): nothing here needs a process of its own.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { expectedOrganicLinks, serpQueryPlan } from '../../src/emulator/data/serp.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, query, runOkInProcess, variant, workspace } from './harness.js';

const SEED = 13;
const SIZE = 5000;

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator({
    seed: SEED,
    size: SIZE,
    faults: {
      rules: [
        {
          route: 'GET /datasets/snapshots/:id/download',
          rate: 0.4,
          faults: { '500': 1, '503': 1, '429_retry_after': 1, reset_before: 1, reset: 2, truncated_gzip: 2 },
          retry_after_s: 0,
          reset_after_bytes: 20_000,
        },
        { route: 'POST /request', rate: 0.3, faults: { '429': 1, '502': 1, reset_before: 1, reset: 1 } },
      ],
    },
  });
});
afterAll(() => emu?.close());

const FAST_RETRIES = [
  /api_key: (.*)\n/,
  'api_key: $1\n  retry: { retries: 3, base_delay_ms: 10, max_delay_ms: 50 }\n',
] as [RegExp, string];

describe('a flaky service', () => {
  it('snapshot parts: every record exactly once despite failed and cut-short downloads', async () => {
    const ws = workspace();
    const file = ws.write(
      'flaky_snapshot.yaml',
      variant(ws, 'snapshot_to_parquet.yaml', [
        FAST_RETRIES,
        ['records_limit: 5000', 'records_limit: 4200'],
        ['batch_size: 1000 }', 'batch_size: 1000 }\n  poll: { interval_ms: 50 }'],
      ]),
    );
    const truncatedBefore = emu.stats.faults.truncated_gzip ?? 0;
    const r = await runOkInProcess(file, emu);
    // Bodies cut short after the client had the headers: only re-reading the whole unit recovers those.
    expect(emu.stats.faults.truncated_gzip ?? 0).toBeGreaterThan(truncatedBefore);
    expect(r.stderr).toMatch(/truncated gzip input.*reading it again/);
    expect(r.stdout).toMatch(/retries +[1-9]/);

    const expected: string[] = [];
    for (let i = 0; i < SIZE && expected.length < 4200; i++) {
      const p = companyProfile(SEED, i);
      if (Number(p.followers) > 0) expected.push(p.company_id as string);
    }
    const rows = await query(
      `SELECT company_id FROM read_parquet('${path.join(ws.out, 'company_profiles_parquet')}/**/*.parquet', hive_partitioning = true)`,
    );
    expect(rows.map((x) => x.company_id).sort()).toEqual(expected.sort());
  });

  it('SERP crawl: every organic result exactly once despite failed requests', async () => {
    const ws = workspace();
    const file = ws.write(
      'flaky_serp.yaml',
      variant(ws, 'serp.yaml', [FAST_RETRIES, [/write: merge\n.*primary_key.*\n/, 'write: append\n']]),
    );
    const r = await runOkInProcess(file, emu);
    expect(r.stdout).toMatch(/retries +[1-9]/);
    const queries = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon'];
    const expected = queries.flatMap((q) =>
      expectedOrganicLinks(SEED, 'www.google.com', q)
        .slice(0, 5 * serpQueryPlan(SEED, 'www.google.com', q).pageSize)
        .map((link) => `${q} ${link}`),
    );
    const rows = await query(`SELECT query, link FROM w.serp_organic`, {
      duckdb: path.join(ws.out, 'warehouse.duckdb'),
    });
    expect(rows.map((x) => `${x.query} ${x.link}`).sort()).toEqual(expected.sort());
  });
});
