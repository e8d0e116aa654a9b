import { describe, expect, it } from 'vitest';
import { normalizeSchema, normalizeTransform } from '../../src/transforms/normalize.js';
import { build, run, serpPage } from './fixtures.js';

describe('normalize', () => {
  it('rejects unknown presets, unknown keys and options of other presets', () => {
    expect(normalizeSchema.safeParse({ type: 'normalize', preset: 'serp_knowledge' }).success).toBe(false);
    expect(normalizeSchema.safeParse({ type: 'normalize', preset: 'reviews', fid: 'x' }).success).toBe(false);
    const r = normalizeSchema.safeParse({ type: 'normalize', preset: 'reviews', keep_image_data: true });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['keep_image_data']);
    expect(r.error?.issues[0]?.message).toMatch(/serp_organic/);
    expect(normalizeSchema.safeParse({ type: 'normalize', preset: 'serp_images', keep_image_data: true }).success).toBe(
      true,
    );
  });

  it('a row the preset cannot read goes to the dead letters with the unit and reason; the rest continue', async () => {
    const bad: Record<string, unknown> = { general: { query: 'q' } };
    Object.defineProperty(bad, 'organic', {
      enumerable: true,
      get() {
        throw new Error('unreadable block');
      },
    });
    const good = serpPage({ organic: [{ link: 'https://a.test/' }] });
    const t = build(normalizeTransform, { type: 'normalize', preset: 'serp_organic' });
    const { rows, deadLetters } = await run(t, [bad, good], { unitId: 'serp:q:start:0' });
    expect(rows.map((r) => r.link)).toEqual(['https://a.test/']);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({ unit: 'serp:q:start:0', stage: 'transform:normalize:serp_organic' });
    expect(deadLetters[0]!.reason).toMatch(/unreadable block/);
  });
});
