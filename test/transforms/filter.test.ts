import { describe, expect, it } from 'vitest';
import { DateOnly } from '../../src/core/values.js';
import { filterSchema, filterTransform } from '../../src/transforms/filter.js';
import { build, run } from './fixtures.js';

const rows = [
  {
    id: 1,
    country: 'US',
    followers: 500,
    tags: ['a', 'b'],
    name: 'Acme Widgets',
    at: new Date('2025-01-10T00:00:00Z'),
    day: new DateOnly('2025-01-10'),
    ok: true,
    geo: { city: 'Austin' },
  },
  {
    id: 2,
    country: 'DE',
    followers: '1,200',
    tags: ['c'],
    name: 'Berlin Gadgets',
    at: new Date('2025-02-10T00:00:00Z'),
    day: new DateOnly('2025-02-10'),
    ok: false,
    geo: { city: 'Berlin' },
  },
  { id: 3, country: null, followers: 50, tags: [], name: 'Nameless', at: null, day: null, ok: null, geo: {} },
];

async function ids(config: Record<string, unknown>): Promise<unknown[]> {
  const { rows: out } = await run(build(filterTransform, { type: 'filter', ...config }), rows);
  return out.map((r) => r.id);
}

describe('filter', () => {
  it('comparisons on numbers, numeric text, text, booleans, timestamps and dates', async () => {
    expect(await ids({ field: 'followers', op: '>=', value: 500 })).toEqual([1, 2]);
    expect(await ids({ field: 'followers', op: '<', value: 100 })).toEqual([3]);
    // A number in the row against numeric text in the config compares as numbers; text against text as text.
    expect(await ids({ field: 'followers', op: '>', value: '60' })).toEqual([1]);
    expect(await ids({ field: 'followers', op: '>', value: 1000 })).toEqual([2]);
    expect(await ids({ field: 'country', op: '=', value: 'DE' })).toEqual([2]);
    expect(await ids({ field: 'name', op: '>', value: 'B' })).toEqual([2, 3]);
    expect(await ids({ field: 'ok', op: '=', value: true })).toEqual([1]);
    expect(await ids({ field: 'at', op: '>', value: '2025-02-01T00:00:00Z' })).toEqual([2]);
    expect(await ids({ field: 'day', op: '<=', value: '2025-01-10' })).toEqual([1]);
    expect(await ids({ field: 'geo.city', op: '=', value: 'Austin' })).toEqual([1]);
  });

  it('null matches only is_null (!= and not_in skip it)', async () => {
    expect(await ids({ field: 'country', op: 'is_null' })).toEqual([3]);
    expect(await ids({ field: 'country', op: 'is_not_null' })).toEqual([1, 2]);
    expect(await ids({ field: 'country', op: '!=', value: 'US' })).toEqual([2]);
    expect(await ids({ field: 'country', op: 'not_in', value: ['US'] })).toEqual([2]);
    expect(await ids({ field: 'geo.city', op: 'is_null' })).toEqual([3]);
  });

  it('in, not_in, contains on text and lists', async () => {
    expect(await ids({ field: 'country', op: 'in', value: ['US', 'DE'] })).toEqual([1, 2]);
    expect(await ids({ field: 'id', op: 'in', value: [3, '1'] })).toEqual([1, 3]);
    expect(await ids({ field: 'name', op: 'contains', value: 'Gadget' })).toEqual([2]);
    expect(await ids({ field: 'tags', op: 'contains', value: 'b' })).toEqual([1]);
  });

  it('all / any combine, and nest', async () => {
    expect(
      await ids({
        all: [
          { field: 'followers', op: '>', value: 10 },
          {
            any: [
              { field: 'country', op: '=', value: 'US' },
              { field: 'country', op: 'is_null' },
            ],
          },
        ],
      }),
    ).toEqual([1, 3]);
    expect(
      await ids({
        any: [
          { field: 'id', op: '=', value: 2 },
          { field: 'id', op: '=', value: 3 },
        ],
      }),
    ).toEqual([2, 3]);
  });

  it('config errors say what to fix', () => {
    const bad = [
      { type: 'filter' },
      { type: 'filter', field: 'a', op: '=', all: [{ field: 'a', op: 'is_null' }] },
      { type: 'filter', field: 'a', op: 'in', value: 'US' },
      { type: 'filter', field: 'a', op: 'is_null', value: 1 },
      { type: 'filter', field: 'a', op: '=' },
      { type: 'filter', field: 'a', op: 'like', value: 'x%' },
      { type: 'filter', all: [{ field: 'a', op: 'in', value: 1 }] },
      { type: 'filter', field: 'a' },
    ];
    for (const c of bad) expect(filterSchema.safeParse(c).success, JSON.stringify(c)).toBe(false);
    const msg = filterSchema.safeParse({ type: 'filter', field: 'a', op: 'in', value: 'US' }).error?.issues[0]?.message;
    expect(msg).toMatch(/list value/);
  });
});
