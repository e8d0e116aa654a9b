import { describe, expect, it } from 'vitest';
import { inShard, planLine, planUnits } from '../../../src/engine/stages/plan.js';
import { MemorySource, sourceContext } from '../in-memory.js';

const units = Array.from({ length: 60 }, (_, i) => ({ id: `u${i}`, rows: [] }));

describe('planUnits', () => {
  it('returns every planned unit of an unsharded run', async () => {
    const planned = await planUnits(new MemorySource(units), sourceContext());
    expect(planned.map((u) => u.id)).toEqual(units.map((u) => u.id));
  });

  it('keeps a shard’s share: the shards of a run split the units without overlap', async () => {
    const shares = await Promise.all(
      [0, 1, 2].map((index) => planUnits(new MemorySource(units), sourceContext(), { index, count: 3 })),
    );
    const ids = shares.flatMap((s) => s.map((u) => u.id));
    expect(ids.sort()).toEqual(units.map((u) => u.id).sort());
    for (const s of shares) expect(s.length).toBeGreaterThan(0);
    expect(planLine(shares[1]!, { index: 1, count: 3 })).toBe(`${shares[1]!.length} unit(s) planned in shard 1/3`);
    expect(planLine(shares[1]!)).toBe(`${shares[1]!.length} unit(s) planned`);
  });
});

describe('inShard', () => {
  it('puts every unit in exactly one shard', () => {
    const all = units.map((u) => ({ id: u.id, params: {} }));
    const counts = [0, 1, 2].map((index) => all.filter((u) => inShard(u, { index, count: 3 })).length);
    expect(counts.reduce((a, b) => a + b)).toBe(all.length);
  });

  it('keeps all pages of one query together by shard_key', () => {
    const pages = Array.from({ length: 10 }, (_, p) => ({
      id: `serp:q:start:${p * 10}`,
      params: { shard_key: 'serp:q' },
    }));
    const shardOf = (u: (typeof pages)[0]): number => [0, 1, 2].find((index) => inShard(u, { index, count: 3 }))!;
    expect(new Set(pages.map(shardOf)).size).toBe(1);
  });
});
