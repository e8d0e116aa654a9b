import { describe, expect, it } from 'vitest';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import { build, run, serpPage } from '../fixtures.js';

const organic = () => build(normalizeTransform, { type: 'normalize', preset: 'serp_organic' });

describe('normalize serp_organic', () => {
  it('merges organic and oragnic, drops repeated links, ranks the merged list', async () => {
    const page = serpPage({
      organic: [{ link: 'https://a.test/' }, { link: 'https://b.test/' }, { link: 'https://c.test/' }],
      oragnic: [{ link: 'https://b.test/' }, { link: 'https://d.test/' }, { link: 'https://a.test/' }],
    });
    const { rows } = await run(organic(), [page]);
    expect(rows.map((r) => r.link)).toEqual([
      'https://a.test/',
      'https://b.test/',
      'https://c.test/',
      'https://d.test/',
    ]);
    expect(rows.map((r) => r.rank)).toEqual([1, 2, 3, 4]);
    expect(rows.map((r) => r.source_list)).toEqual(['organic', 'organic', 'organic', 'oragnic']);
    // d was the second item of the oragnic list, fifth block entry of the page.
    expect(rows[3]).toMatchObject({ source_rank: 2, global_rank: 5 });
  });

  it('keeps the first occurrence of a duplicate (its title, its list)', async () => {
    const page = serpPage({
      organic: [{ link: 'https://x.test/', extra: { title: 'first' } }],
      oragnic: [{ link: 'https://x.test/', extra: { title: 'second' } }],
    });
    const { rows } = await run(organic(), [page]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ title: 'first', source_list: 'organic' });
  });

  it('takes query, page and start from the unit params, and the fetch time from the page row', async () => {
    const page = {
      ...serpPage({
        query: 'in payload',
        page: 2,
        organic: [{ link: 'https://a.test/' }, { link: 'https://b.test/' }],
      }),
      fetched_at: '2025-04-05T06:07:08Z',
    };
    // A fetch time in the unit params is not a channel the preset reads: the page row says when it was fetched.
    const { rows } = await run(organic(), [page], {
      unitParams: { query: 'from unit', start: '10', page: 2, fetched_at: '1999-01-01T00:00:00Z' },
    });
    expect(rows[1]).toMatchObject({ query: 'from unit', page: 2, start: 10, rank: 2, position: 12 });
    expect(rows[1]!.fetched_at).toEqual(new Date('2025-04-05T06:07:08Z'));
    expect(rows[1]!.request_id).toBe('req_2');
  });

  it('falls back to general.query, pagination.current_page and general.timestamp', async () => {
    const page = serpPage({ query: 'lamps', page: 3, pageSize: 7, organic: [{ link: 'https://a.test/' }] });
    const { rows } = await run(organic(), [page]);
    expect(rows[0]).toMatchObject({ query: 'lamps', page: 3, position: null });
    expect(rows[0]!.fetched_at).toEqual(new Date('2025-03-01T10:00:00.000Z'));
  });

  it('derives the page from start and the page size the data implies (not 10)', async () => {
    const page = serpPage({ page: 3, pageSize: 7, organic: [{ link: 'https://a.test/' }] });
    delete (page.pagination as Record<string, unknown>).current_page;
    const { rows } = await run(organic(), [page], { unitParams: { start: 14 } });
    expect(rows[0]).toMatchObject({ page: 3, start: 14, position: 15 });

    // No page list naming the offset: size from next_page_start − start.
    const bare = serpPage({ page: 4, pageSize: 7, organic: [{ link: 'https://a.test/' }] });
    const pg = bare.pagination as Record<string, unknown>;
    delete pg.current_page;
    pg.pages = [];
    const { rows: r2 } = await run(organic(), [bare], { unitParams: { start: 21 } });
    expect(r2[0]).toMatchObject({ page: 4, start: 21 });
  });

  it('gives null for missing optional fields and reports image presence, not image data', async () => {
    const page = serpPage({
      organic: [
        { link: 'https://full.test/' },
        {
          link: 'https://bare.test/',
          omit: [
            'icon',
            'image',
            'image_base64',
            'duration',
            'duration_sec',
            'extensions',
            'snippet_highlighted_words',
            'source',
            'global_rank',
          ],
        },
      ],
    });
    const { rows } = await run(organic(), [page]);
    const [full, bare] = rows;
    expect(full).toMatchObject({
      has_icon: true,
      has_image: true,
      image_url: null,
      duration: '3:07',
      duration_sec: 187,
    });
    expect(full!.extensions).toEqual([
      { type: 'text', text: 'Inline note', link: null, inline: true, extended: null, rank: 1 },
      { type: 'site_link', text: 'Sub page', link: 'https://full.test/sub', inline: null, extended: true, rank: 2 },
    ]);
    expect(full!.snippet_highlighted_words).toEqual(['generated', 'words']);
    expect(full).not.toHaveProperty('icon');
    expect(bare).toMatchObject({
      has_icon: false,
      has_image: false,
      duration: null,
      duration_sec: null,
      extensions: null,
      snippet_highlighted_words: null,
      source: null,
      global_rank: null,
      rank: 2,
    });
    expect(Object.keys(bare!)).toEqual(Object.keys(full!));
  });

  it('keeps inline image data when asked', async () => {
    const t = build(normalizeTransform, { type: 'normalize', preset: 'serp_organic', keep_image_data: true });
    const { rows } = await run(t, [serpPage({ organic: [{ link: 'https://a.test/' }] })]);
    expect(rows[0]).toMatchObject({ icon: 'data:image/png;base64,AAAA', image_base64: 'data:image/jpeg;base64,CCCC' });
  });

  it('yields nothing for an empty page, and rows for every page of a multi-batch stream', async () => {
    const empty = serpPage({ omit: ['organic', 'oragnic'] });
    const p1 = serpPage({ organic: [{ link: 'https://a.test/' }] });
    const p2 = serpPage({ page: 2, organic: [{ link: 'https://b.test/' }, { link: 'https://c.test/' }] });
    const { rows, batches } = await run(organic(), [[empty], [p1], [p2]]);
    expect(batches).toHaveLength(2);
    expect(rows.map((r) => [r.page, r.rank])).toEqual([
      [1, 1],
      [2, 1],
      [2, 2],
    ]);
  });

  it('accepts rows that are already single organic items (a decoder split at `organic`)', async () => {
    const item = (serpPage({ organic: [{ link: 'https://solo.test/' }] }).organic as Record<string, unknown>[])[0]!;
    const { rows } = await run(organic(), [item], { unitParams: { query: 'q', start: 0 } });
    expect(rows[0]).toMatchObject({ link: 'https://solo.test/', query: 'q', page: 1, rank: 1, position: 1 });
  });

  it('a Maps result page: each place keeps its fid, address, categories, rating and position', async () => {
    const place = {
      title: 'Widget Hotel',
      link: 'https://hotel.example.test/',
      address: '1 Main St',
      category: [{ title: '4-star hotel' }, { id: 'hotel', title: 'Hotel' }, 'Lodging'],
      tags: [{ group_id: 'amenities', group_title: 'Amenities', key_id: 21, value_title: 'Pool' }],
      rating: 4.5,
      reviews_cnt: '6,840',
      latitude: 29.75,
      longitude: -95.35,
      claimed: true,
      fid: '0x8640bf23daf96abd:0xf5e981232fe0153f',
      rank: 1,
    };
    const { rows } = await run(build(normalizeTransform, { type: 'normalize', preset: 'serp_organic' }), [
      { general: { query: 'hotels in widgetville' }, organic: [place] },
    ]);
    expect(rows[0]).toMatchObject({
      fid: place.fid,
      address: '1 Main St',
      category: ['4-star hotel', 'Hotel', 'Lodging'],
      tags: [{ group: 'Amenities', value: 'Pool' }],
      rating: 4.5,
      reviews_cnt: 6840,
      latitude: 29.75,
      claimed: true,
      phone: null,
    });
  });
});
