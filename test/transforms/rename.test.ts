import { describe, expect, it } from 'vitest';
import { renameSchema, renameTransform } from '../../src/transforms/rename.js';
import { build, run } from './fixtures.js';

describe('rename', () => {
  it('renames in place and skips missing fields', async () => {
    const t = build(renameTransform, { type: 'rename', fields: { display_link: 'domain', nope: 'never' } });
    const { rows } = await run(t, [{ link: 'l', display_link: 'd', rank: 1 }]);
    expect(rows).toEqual([{ link: 'l', domain: 'd', rank: 1 }]);
    expect(Object.keys(rows[0]!)).toEqual(['link', 'domain', 'rank']);
  });

  it('the renamed field replaces an existing one of the new name; swaps work', async () => {
    const over = build(renameTransform, { type: 'rename', fields: { a: 'b' } });
    expect((await run(over, [{ b: 'old', a: 'new' }])).rows).toEqual([{ b: 'new' }]);
    // When the row lacks the source, the existing field of the target name stays.
    expect((await run(over, [{ b: 'kept' }])).rows).toEqual([{ b: 'kept' }]);
    const swap = build(renameTransform, { type: 'rename', fields: { a: 'b', b: 'a' } });
    expect((await run(swap, [{ a: 1, b: 2 }])).rows).toEqual([{ b: 1, a: 2 }]);
  });

  it('rejects two fields renamed to one name, and an empty map', () => {
    expect(renameSchema.safeParse({ type: 'rename', fields: { a: 'x', b: 'x' } }).success).toBe(false);
    expect(renameSchema.safeParse({ type: 'rename', fields: {} }).success).toBe(false);
  });
});
