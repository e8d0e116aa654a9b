import { describe, expect, it } from 'vitest';
import { selectSchema, selectTransform } from '../../src/transforms/select.js';
import { build, run } from './fixtures.js';

describe('select', () => {
  it('keeps the listed fields in order, null for missing ones', async () => {
    const t = build(selectTransform, { type: 'select', fields: ['c', 'a', 'z'] });
    const { rows } = await run(t, [{ a: 1, b: 2, c: 3 }, { b: 5 }]);
    expect(rows).toEqual([
      { c: 3, a: 1, z: null },
      { c: null, a: null, z: null },
    ]);
    expect(Object.keys(rows[0]!)).toEqual(['c', 'a', 'z']);
  });

  it('exclude drops the listed fields', async () => {
    const t = build(selectTransform, { type: 'select', fields: ['b'], exclude: true });
    const { rows } = await run(t, [{ a: 1, b: 2, c: { d: 4 } }]);
    expect(rows).toEqual([{ a: 1, c: { d: 4 } }]);
  });

  it('needs at least one field', () => {
    expect(selectSchema.safeParse({ type: 'select', fields: [] }).success).toBe(false);
  });
});
