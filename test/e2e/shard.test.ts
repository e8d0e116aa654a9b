/**
 * `sluice run --shard i/n`: every unit falls in exactly one shard, so the shards' outputs together are the full
 * run's output with no row twice. Each shard runs in its own copy of the pipelines (its own state and outputs, as
 * on separate machines).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, query, runOk, sluice, snapshots, variant, workspace } from './harness.js';

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

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator({ seed: 5, size: 5000 });
});
afterAll(() => emu?.close());

/** Runs `text` (a pipeline) in a fresh workspace with `args`; returns the rows of `sql` over its DuckDB output. */
async function runIn(text: string, args: string[], sql: string): Promise<string[]> {
  const ws = workspace();
  const file = ws.write('sharded.yaml', text);
  await runOk(file, emu, ...args);
  const rows = await query(sql, { duckdb: path.join(ws.out, 'warehouse.duckdb') });
  return rows.map((x) => Object.values(x).join(' | '));
}

function expectPartition(full: string[], shards: string[][]): void {
  const all = shards.flat();
  expect(new Set(all).size, 'no row in two shards').toBe(all.length);
  expect([...all].sort()).toEqual([...full].sort());
  expect(new Set(full).size).toBe(full.length);
  for (const s of shards) expect(s.length, 'every shard has work').toBeGreaterThan(0);
}

describe('--shard i/n', () => {
  it('SERP crawl: the shards together are the full run, no overlap (all pages of a query in one shard)', async () => {
    const ws = workspace();
    const text = variant(ws, 'serp.yaml', [
      [/queries: \[.*\]/, `queries: [${QUERIES.map((q) => `'${q}'`).join(', ')}]`],
      ['max_pages: 5', 'max_pages: 3'],
    ]);
    const sql = `SELECT query, page, rank, link FROM w.serp_organic`;
    const full = await runIn(text, [], sql);
    expect(full.length).toBeGreaterThan(50);
    const shards = [];
    for (let i = 0; i < 3; i++) shards.push(await runIn(text, ['--shard', `${i}/3`], sql));
    expectPartition(full, shards);
    // A query's pages stay together: no query appears in two shards.
    const queriesOf = shards.map((s) => new Set(s.map((row) => row.split(' | ')[0])));
    for (let i = 0; i < 3; i++)
      for (let j = i + 1; j < 3; j++) expect([...queriesOf[i]!].filter((q) => queriesOf[j]!.has(q))).toEqual([]);
  });

  // CI only (SLUICE_CRASH_MATRIX=full): test/e2e/shards-scale-out.test.ts shards a snapshot in every npm test.
  it.runIf(process.env.SLUICE_CRASH_MATRIX === 'full')(
    'snapshot parts: shards of one snapshot together are the full run, no overlap',
    async () => {
      const ws = workspace();
      const text = variant(ws, 'company_profiles.yaml', [
        ['batch_size: 1000 }', 'batch_size: 1000 }\n  poll: { interval_ms: 50 }'],
      ]);
      const sql = `SELECT company_id FROM w.company_profiles`;
      const full = await runIn(text, [], sql);
      expect(full.length).toBeGreaterThan(2000);
      // The unsharded run started the one filter job; the shards split the parts of its snapshot.
      const before = emu.stats.paid.filter ?? 0;
      const snapshotId = (await snapshots(emu))
        .sort((a, b) => String(a.created).localeCompare(String(b.created)))
        .at(-1)!.id as string;
      const sharded = text.replace(
        /\n {2}filter:[\s\S]*?\n {2}files: .*\n {2}records_limit: .*\n/,
        `\n  snapshot_id: ${snapshotId}\n`,
      );
      expect(sharded).toContain(`snapshot_id: ${snapshotId}`);
      const shards = [];
      for (let i = 0; i < 2; i++) shards.push(await runIn(sharded, ['--shard', `${i}/2`], sql));
      expectPartition(full, shards);
      expect(emu.stats.paid.filter ?? 0).toBe(before);
    },
  );

  it('a sharded run refuses to start a paid filter job of its own, and says how to shard one snapshot', async () => {
    const ws = workspace();
    const file = ws.write('sharded.yaml', variant(ws, 'company_profiles.yaml', []));
    const before = emu.stats.paid.filter ?? 0;
    const r = await sluice(['run', file, '--shard', '0/2', '--no-progress'], { service: emu });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: a sharded run \(--shard\) will not start a filter job/m);
    expect(r.stderr).toMatch(/^\s*fix: .*source\.snapshot_id/m);
    expect(emu.stats.paid.filter ?? 0).toBe(before);
  });
});
