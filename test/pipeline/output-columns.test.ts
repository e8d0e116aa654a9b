/** Which transform chains fix the columns a sink receives, and what those columns are. */
import { describe, expect, it } from 'vitest';
import { outputColumns } from '../../src/pipeline/output-columns.js';
import type { Row, TransformContext } from '../../src/core/types.js';
import { PRESETS, presetColumns, type PresetName } from '../../src/transforms/normalize.js';

/** One input per preset whose rows have one key set, each giving at least one row. */
const SAMPLE_INPUTS: Record<Exclude<PresetName, 'company_profile'>, Row> = {
  serp_organic: { organic: [{ link: 'https://example.com/', title: 'sample' }] },
  serp_related: { related: [{ text: 'sample' }] },
  serp_images: { images: [{ link: 'https://example.com/' }] },
  serp_pages: { general: {} },
  reviews: { reviews: [{ review_id: 'sample' }] },
};

const QUIET: TransformContext = {
  log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  deadLetter: () => undefined,
  unitId: 'sample',
  unitParams: {},
};

describe('presetColumns', () => {
  it('knows every preset whose rows have one key set, and not company_profile (it keeps the record’s fields)', () => {
    for (const preset of Object.keys(PRESETS) as PresetName[]) {
      const columns = presetColumns(preset);
      if (preset === 'company_profile') expect(columns, preset).toBeUndefined();
      else expect(columns?.length, preset).toBeGreaterThan(3);
    }
  });

  it('serp_organic: the result columns, and the image payloads only with keep_image_data', () => {
    const plain = presetColumns('serp_organic')!;
    expect(plain).toEqual(expect.arrayContaining(['query', 'page', 'rank', 'link', 'title', 'fetched_at']));
    expect(plain).not.toContain('image_base64');
    expect(presetColumns('serp_organic', true)).toEqual([...plain, 'icon', 'image', 'image_base64']);
  });

  // The declaration is the one source of a preset's columns: the rows the preset really builds must have exactly them.
  it('are the keys of the rows each preset builds, in order, with and without keep_image_data', () => {
    for (const [preset, input] of Object.entries(SAMPLE_INPUTS) as [keyof typeof SAMPLE_INPUTS, Row][])
      for (const keepImageData of [false, true]) {
        const rows = PRESETS[preset](structuredClone(input), QUIET, { keepImageData });
        expect(rows.length, preset).toBeGreaterThan(0);
        for (const row of rows) expect(Object.keys(row), preset).toEqual(presetColumns(preset, keepImageData));
      }
  });

  it('reviews: the typed detail columns are always there', () => {
    expect(presetColumns('reviews')).toEqual(expect.arrayContaining(['fid', 'review_id', 'rating', 'created_at']));
  });
});

describe('outputColumns', () => {
  it('unknown without a transform that fixes them', () => {
    expect(outputColumns([])).toBeUndefined();
    expect(outputColumns([{ type: 'cast', fields: { a: 'int' } }])).toBeUndefined();
  });

  it('select fixes them; rename, cast, filter, dedupe and select-exclude carry them', () => {
    const known = outputColumns([
      { type: 'select', fields: ['id', 'name', 'city', 'zip'] },
      { type: 'rename', fields: { name: 'full_name', zip: 'city', missing: 'x' } },
      { type: 'cast', fields: { id: 'int' } },
      { type: 'filter', field: 'id', op: '>', value: 1 },
      { type: 'dedupe', key: ['id'] },
      { type: 'select', fields: ['full_name'], exclude: true },
    ]);
    // `zip` renamed to `city` replaces the old `city`; a renamed field the rows lack adds nothing.
    expect(known).toEqual({ columns: ['id', 'city'], from: 'transforms[0] (select)' });
  });

  it('flatten makes them unknown again; a later select fixes them again', () => {
    expect(
      outputColumns([
        { type: 'select', fields: ['a'] },
        { type: 'flatten', separator: '__' },
      ]),
    ).toBeUndefined();
    expect(
      outputColumns([
        { type: 'normalize', preset: 'company_profile' },
        { type: 'select', fields: ['id'] },
      ])?.columns,
    ).toEqual(['id']);
  });
});
