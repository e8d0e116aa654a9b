import { describe, expect, it } from 'vitest';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import { build, imageItem, run, serpPage } from '../fixtures.js';

const images = (extra: Record<string, unknown> = {}) =>
  build(normalizeTransform, { type: 'normalize', preset: 'serp_images', ...extra });

describe('normalize serp_images', () => {
  it('flattens the recipe card into recipe_* columns', async () => {
    const recipe = {
      rating: 4.7,
      reviews_cnt: '1,204',
      title: 'Generated stew',
      ingredients: ['water', 'salt', 3],
      summary: 'A made-up stew.',
      duration: '1 hr 20 min',
      duration_sec: 4800,
      volume: '4 servings',
    };
    const page = serpPage({ images: [imageItem(1, { recipe }), imageItem(2)] });
    const { rows } = await run(images(), [page]);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      rank: 1,
      global_rank: 21,
      link: 'https://site1.example.test/gallery',
      title: 'Picture 1',
      original_image: 'https://img.example.test/full/1.jpg',
      has_image: true,
      image_url: null,
      source_logo: null,
      has_recipe: true,
      recipe_rating: 4.7,
      recipe_reviews_cnt: 1204,
      recipe_title: 'Generated stew',
      recipe_ingredients: ['water', 'salt', '3'],
      recipe_summary: 'A made-up stew.',
      recipe_duration: '1 hr 20 min',
      recipe_duration_sec: 4800,
      recipe_volume: '4 servings',
    });
    expect(rows[1]).toMatchObject({
      has_recipe: false,
      recipe_rating: null,
      recipe_ingredients: null,
      recipe_volume: null,
    });
    expect(Object.keys(rows[1]!)).toEqual(Object.keys(rows[0]!));
    expect(rows[0]).not.toHaveProperty('image_base64');
  });

  it('keeps URL images and, on request, inline image data', async () => {
    const item = imageItem(1, { image: 'https://thumb.test/1.jpg', source_logo: 'https://logo.test/1.png' });
    const { rows } = await run(images(), [serpPage({ images: [item] })]);
    expect(rows[0]).toMatchObject({ image_url: 'https://thumb.test/1.jpg', source_logo: 'https://logo.test/1.png' });
    const { rows: kept } = await run(images({ keep_image_data: true }), [serpPage({ images: [imageItem(1)] })]);
    expect(kept[0]).toMatchObject({
      image: 'data:image/jpeg;base64,EEEE',
      image_base64: 'data:image/jpeg;base64,FFFF',
      source_logo: 'data:image/png;base64,DDDD',
    });
  });

  it('no images block → no rows', async () => {
    expect((await run(images(), [serpPage({ omit: ['images'] })])).rows).toEqual([]);
  });
});
