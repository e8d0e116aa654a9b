/**
 * Shards behind one address share one 429 budget (client/shared-budget.ts): four `sluice run --shard i/4` processes
 * of one crawl, started together in one workspace (so sharing the pipeline's state directory, as pods share it on a
 * volume), against one emulator that answers 429 to half of all requests and counts them per IP, as the service
 * does (25 within five minutes block it). Each shard alone would keep its own budget of 20; together they would
 * block the IP. Shared, the emulator never sees more than 20 in any five minutes, the IP is never blocked, and each
 * shard completes or stops with the budget named.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { API_KEY, failure, sluice, window429, workspace, type Result } from './harness.js';

const SHARDS = 4;

const open: EmulatorHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

const CRAWL = [
  'version: 1',
  'name: shared_budget',
  'service:',
  '  base_url: ${SLUICE_BASE_URL:?}',
  '  api_key: ${SLUICE_API_KEY:?}',
  '  retry: { retries: 5, base_delay_ms: 10, max_delay_ms: 50 }',
  'source:',
  '  type: serp',
  '  zone: serp_zone',
  "  queries: ['coffee roasters portland', 'ramen berlin', 'bike repair lyon', 'tea shops kyoto', 'vegan bakery oslo', 'climbing gym madrid', 'bookshop edinburgh', 'tailor hanoi']",
  '  max_pages: 4',
  // A first wave at this concurrency would collect 32 answers of 429 at once, in every shard.
  '  concurrency: 64',
  'sink: { type: jsonl, path: ../out/crawl }',
  '',
].join('\n');

function completedOrStopped(r: Result, shard: number): 'completed' | 'stopped' {
  if (r.code === 0) return 'completed';
  expect(r.code, `shard ${shard}: ${r.stderr}`).toBe(1);
  const { error, fix } = failure(r);
  expect(error).toMatch(/stopped: .* answered 429 \(too many requests\) 2\d times within 5 minutes/);
  expect(fix).toMatch(/wait 5 minutes, then run again/);
  return 'stopped';
}

describe('four shards behind one address', () => {
  it('half of all requests answered 429: at most 20 in any five minutes across the shards, never blocked', async () => {
    const e = await startEmulator({
      apiKey: API_KEY,
      seed: 31,
      size: 3000,
      // The emulator's five-minute window is five real minutes, as the shards' clocks count it.
      timeScale: 1,
      faults: { rules: [{ route: '**', rate: 0.5, faults: { '429': 1 } }] },
    });
    open.push(e);
    const ws = workspace();
    const file = ws.write('budget.yaml', CRAWL);
    const results = await Promise.all(
      [...Array(SHARDS).keys()].map((i) =>
        sluice(['run', file, '--shard', `${i}/${SHARDS}`, '--no-progress'], { service: e }),
      ),
    );
    const outcomes = results.map((r, i) => completedOrStopped(r, i));
    const w = await window429(e);
    expect(w.blocked, JSON.stringify({ w, outcomes })).toBe(false);
    expect(w.max_in_window, JSON.stringify({ w, outcomes })).toBeLessThanOrEqual(20);
    // The shards did meet the faults: the budget was put to work, not avoided.
    expect(w.total_429).toBeGreaterThan(0);
    for (const r of results) expect(r.stderr).not.toMatch(/refuses this IP|blocked/);
  }, 120_000);
});
