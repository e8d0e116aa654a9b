import { describe, expect, it } from 'vitest';
import { DateOnly } from '../../src/core/values.js';
import { flattenTransform } from '../../src/transforms/flatten.js';
import { build, run } from './fixtures.js';

const row = () => ({
  id: 1,
  general: { query: 'q', geo: { country: 'DE', city: { name: 'Berlin' } } },
  list: [{ a: 1 }, { a: 2 }],
  when: new Date('2025-01-01T00:00:00Z'),
  day: new DateOnly('2025-01-02'),
  empty: {},
});

describe('flatten', () => {
  it('nested objects become a__b columns; lists, dates and timestamps stay whole', async () => {
    const { rows } = await run(build(flattenTransform, { type: 'flatten' }), [row()]);
    expect(rows[0]).toEqual({
      id: 1,
      general__query: 'q',
      general__geo__country: 'DE',
      general__geo__city__name: 'Berlin',
      list: [{ a: 1 }, { a: 2 }],
      when: new Date('2025-01-01T00:00:00Z'),
      day: new DateOnly('2025-01-02'),
      empty: null,
    });
  });

  it('max_depth limits the levels flattened; separator is configurable', async () => {
    const t = build(flattenTransform, { type: 'flatten', max_depth: 1, separator: '.' });
    const { rows } = await run(t, [row()]);
    expect(rows[0]).toMatchObject({ 'general.query': 'q', 'general.geo': { country: 'DE', city: { name: 'Berlin' } } });
    expect(rows[0]).not.toHaveProperty('general');
  });
});

describe('flatten, two fields that become one name', () => {
  const colliding = { id: 7, a: { b: 1 }, a__b: 2 };

  it('dead-letters the record by default, naming both fields: neither value is dropped silently', async () => {
    const { rows, deadLetters } = await run(build(flattenTransform, { type: 'flatten' }), [colliding, { id: 8 }]);
    expect(rows).toEqual([{ id: 8 }]);
    expect(deadLetters).toEqual([
      {
        unit: 'unit:test',
        stage: 'transform:flatten',
        reason:
          'flatten: `a.b` and `a__b` both become `a__b`; set a separator no field name contains, or on_collision: rename',
        raw: JSON.stringify(colliding),
      },
    ]);
  });

  it('with on_collision: rename keeps both values, the later renamed, and warns once per name', async () => {
    const warnings: string[] = [];
    const t = build(flattenTransform, { type: 'flatten', on_collision: 'rename' });
    const log = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const { rows, deadLetters } = await run(t, [colliding, { ...colliding, id: 9 }], { log });
    expect(deadLetters).toEqual([]);
    expect(rows).toEqual([
      { id: 7, a__b: 1, a__b__2: 2 },
      { id: 9, a__b: 1, a__b__2: 2 },
    ]);
    expect(warnings).toEqual(['flatten: `a.b` and `a__b` both become `a__b`: the later is `a__b__2` (said once)']);
  });
});
