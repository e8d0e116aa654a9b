import { describe, expect, it } from 'vitest';
import { inShard } from '../../src/unit/run-units.js';

const units = Array.from({ length: 60 }, (_, i) => ({ id: `u${i}`, params: {} }));

describe('inShard', () => {
  it('puts every unit in exactly one shard: the shards of a run split the units without overlap', () => {
    const shares = [0, 1, 2].map((index) => units.filter((u) => inShard(u, { index, count: 3 })));
    const ids = shares.flatMap((s) => s.map((u) => u.id));
    expect(ids.sort()).toEqual(units.map((u) => u.id).sort());
    for (const s of shares) expect(s.length).toBeGreaterThan(0);
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
