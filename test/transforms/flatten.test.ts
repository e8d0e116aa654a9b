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
