import { describe, expect, it } from 'vitest';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import { build, run, serpPage } from '../fixtures.js';

const related = () => build(normalizeTransform, { type: 'normalize', preset: 'serp_related' });

describe('normalize serp_related', () => {
  it('one row per related search, groups walked with item ranks and depth', async () => {
    const page = serpPage({
      query: 'desk lamps',
      related: [
        {
          items: [
            { text: 'Brass lamp', link: 'https://s.test/?q=brass', image: 'https://img.test/brass.jpg', rank: 1 },
            { text: 'Arc lamp', link: 'https://s.test/?q=arc', image: 'data:image/png;base64,QQ', rank: 2 },
          ],
          rank: 1,
          global_rank: 15,
        },
        { text: 'desk lamps cheap', link: 'https://s.test/?q=cheap', rank: 2, global_rank: 16 },
        { text: 'desk lamps led', link: 'https://s.test/?q=led', expanded: true, rank: 3, global_rank: 17 },
      ],
    });
    const { rows } = await run(related(), [page]);
    expect(rows.map((r) => [r.text, r.rank, r.global_rank, r.item_rank, r.depth])).toEqual([
      ['Brass lamp', 1, 15, 1, 1],
      ['Arc lamp', 1, 15, 2, 1],
      ['desk lamps cheap', 2, 16, null, 0],
      ['desk lamps led', 3, 17, null, 0],
    ]);
    expect(rows[0]).toMatchObject({
      query: 'desk lamps',
      page: 1,
      has_image: true,
      image_url: 'https://img.test/brass.jpg',
    });
    expect(rows[1]).toMatchObject({ has_image: true, image_url: null });
    expect(rows[3]!.expanded).toBe(true);
    expect(rows[2]!.expanded).toBeNull();
  });

  it('a page with no related block gives no rows; positions default to list order', async () => {
    expect((await run(related(), [serpPage({ omit: ['related'] })])).rows).toEqual([]);
    const { rows } = await run(related(), [serpPage({ related: [{ text: 'a' }, { text: 'b' }, 'junk'] })]);
    expect(rows.map((r) => [r.text, r.rank, r.link])).toEqual([
      ['a', 1, null],
      ['b', 2, null],
    ]);
  });
});
