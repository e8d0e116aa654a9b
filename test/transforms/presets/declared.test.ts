/**
 * Every preset's rows have exactly its declared columns, and every value fits the declared type (its inferred type
 * joins into the declared one without changing it), whether the input's optional fields are all absent or all
 * present.
 */
import { describe, expect, it } from 'vitest';
import { misfits } from '../../../src/schema/declared-fit.js';
import { PRESETS, normalizeTransform, presetDeclared, type PresetName } from '../../../src/transforms/normalize.js';
import { build, run } from '../fixtures.js';
import { PRESET_INPUTS } from './declared-pages.js';

const presets = Object.keys(PRESETS) as PresetName[];
const cases = presets.flatMap((preset) =>
  (['bare', 'full'] as const).flatMap((input) =>
    [false, true]
      .filter((keep) => !keep || presetDeclared(preset, true).length > presetDeclared(preset, false).length)
      .map((keep) => ({ preset, input, keep, label: `${preset}, ${input} input${keep ? ', keep_image_data' : ''}` })),
  ),
);

describe('declared preset columns', () => {
  it.each(cases)('$label: every row has exactly the declared keys, each value of the declared type', async (c) => {
    const config = { type: 'normalize', preset: c.preset, ...(c.keep && { keep_image_data: true }) };
    const inputs = PRESET_INPUTS[c.preset];
    const { rows, deadLetters } = await run(build(normalizeTransform, config), [structuredClone(inputs[c.input])], {
      unitParams: inputs.unitParams ?? {},
    });
    expect(deadLetters).toEqual([]);
    expect(rows.length).toBeGreaterThan(0);
    const declared = presetDeclared(c.preset, c.keep);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(declared.map((d) => d.name).sort());
      expect(misfits(declared, row)).toEqual([]);
    }
    if (c.input === 'full') {
      // "Every field present" must mean it: only the columns that stand for missing data are null.
      const nullOnly = declared.filter((d) => rows.every((r) => r[d.name] === null)).map((d) => d.name);
      expect(nullOnly).toEqual(EXPECTED_NULL_WHEN_FULL[c.preset] ?? []);
    }
  });

  it('declares each column once, and every preset declares its page context first', () => {
    for (const preset of presets) {
      const names = presetDeclared(preset, true).map((c) => c.name);
      expect(new Set(names).size).toBe(names.length);
      for (const c of presetDeclared(preset, true)) expect(c.description).toMatch(/\S/);
    }
  });

  it('the check itself fails on a missing key, an extra key, a wrong type and a null in a not-null column', () => {
    const declared = presetDeclared('serp_related');
    const good: Record<string, unknown> = Object.fromEntries(declared.map((c) => [c.name, null]));
    good.rank = 1;
    good.depth = 0;
    good.has_image = false;
    expect(misfits(declared, good)).toEqual([]);
    expect(misfits(declared, { ...good, extra: 1 })).toEqual(['extra: not declared']);
    const { text: _text, ...lacking } = good;
    expect(misfits(declared, lacking)).toEqual(['text: missing']);
    expect(misfits(declared, { ...good, rank: 1.5 })).toEqual(['rank: a value of type DOUBLE does not fit BIGINT']);
    expect(misfits(declared, { ...good, depth: null })).toEqual(['depth: null, but declared not null']);
    expect(misfits(declared, { ...good, fetched_at: 'not a Date' })).toHaveLength(1);
  });
});

/** Columns null even on the full input, and why. */
const EXPECTED_NULL_WHEN_FULL: Partial<Record<PresetName, string[]>> = {
  serp_organic: [],
  // `followers: 'many'` does not convert: null, its original kept in `_raw_values`.
  company_profile: ['followers'],
  serp_related: [],
  serp_images: [],
  serp_pages: [],
  reviews: [],
};
