import { describe, expect, it } from 'vitest';
import { dedupeSchema, dedupeTransform } from '../../src/transforms/dedupe.js';
import { build, run } from './fixtures.js';

describe('dedupe', () => {
  it('keeps the first row per key, across batches and across units of the run', async () => {
    const t = build(dedupeTransform, { type: 'dedupe', key: ['query', 'link'] });
    const u1 = await run(
      t,
      [
        [
          { query: 'q', link: 'a', n: 1 },
          { query: 'q', link: 'b', n: 2 },
        ],
        [
          { query: 'q', link: 'a', n: 3 },
          { query: 'r', link: 'a', n: 4 },
        ],
      ],
      { unitId: 'u1' },
    );
    expect(u1.rows.map((r) => r.n)).toEqual([1, 2, 4]);
    const u2 = await run(
      t,
      [
        { query: 'q', link: 'b', n: 5 },
        { query: 'q', link: 'c', n: 6 },
      ],
      { unitId: 'u2' },
    );
    expect(u2.rows.map((r) => r.n)).toEqual([6]);
  });

  it('a unit read again after a failed attempt keeps its rows', async () => {
    const t = build(dedupeTransform, { type: 'dedupe', key: ['id'] });
    const rows = [{ id: 1 }, { id: 2 }, { id: 1 }];
    expect((await run(t, rows, { unitId: 'u1' })).rows).toEqual([{ id: 1 }, { id: 2 }]);
    expect((await run(t, rows, { unitId: 'u1' })).rows).toEqual([{ id: 1 }, { id: 2 }]);
    expect((await run(t, rows, { unitId: 'u2' })).rows).toEqual([]);
  });

  it('keys are typed (1 ≠ "1"), nested paths work, missing equals null', async () => {
    const t = build(dedupeTransform, { type: 'dedupe', key: ['a.b'] });
    const { rows } = await run(t, [{ a: { b: 1 } }, { a: { b: '1' } }, { a: { b: 1 } }, { a: {} }, { x: 1 }]);
    expect(rows).toEqual([{ a: { b: 1 } }, { a: { b: '1' } }, { a: {} }]);
  });

  it('separate pipelines do not share keys', async () => {
    const cfg = { type: 'dedupe', key: ['id'] };
    await run(build(dedupeTransform, cfg), [{ id: 1 }]);
    expect((await run(build(dedupeTransform, cfg), [{ id: 1 }])).rows).toEqual([{ id: 1 }]);
  });

  it('needs a key', () => {
    expect(dedupeSchema.safeParse({ type: 'dedupe', key: [] }).success).toBe(false);
  });
});
