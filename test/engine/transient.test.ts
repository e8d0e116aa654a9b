import { describe, expect, it } from 'vitest';
import { DecodeError, SluiceError } from '../../src/core/errors.js';
import { inShard } from '../../src/engine/run.js';
import { isTransient } from '../../src/engine/transient.js';

describe('isTransient', () => {
  it('retries network, 429, 5xx and short or corrupt bytes; not 4xx or config errors', () => {
    expect(isTransient(Object.assign(new Error('x'), { status: 503 }))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { status: 429 }))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { status: 0 }))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(
      isTransient(new Error('wrapper', { cause: Object.assign(new Error('y'), { code: 'UND_ERR_SOCKET' }) })),
    ).toBe(true);
    expect(isTransient(new DecodeError('u', 5, 'truncated gzip'))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { status: 400 }))).toBe(false);
    expect(isTransient(Object.assign(new Error('x'), { status: 404 }))).toBe(false);
    expect(isTransient(new SluiceError('bad config'))).toBe(false);
  });
});

describe('inShard', () => {
  it('puts every unit in exactly one shard, and all pages of a query in the same one', () => {
    const units = Array.from({ length: 200 }, (_, i) => ({ id: `u${i}`, params: {} }));
    const counts = [0, 1, 2].map((index) => units.filter((u) => inShard(u, { index, count: 3 })).length);
    expect(counts.reduce((a, b) => a + b)).toBe(200);
    expect(Math.min(...counts)).toBeGreaterThan(30);
    const pages = [0, 10, 20].map((s) => ({ id: `serp:q:start:${s}`, params: { shard_key: 'q' } }));
    const shardOf = (u: (typeof pages)[0]): number => [0, 1, 2].find((index) => inShard(u, { index, count: 3 }))!;
    expect(new Set(pages.map(shardOf)).size).toBe(1);
  });
});
