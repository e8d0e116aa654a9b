import { describe, expect, it } from 'vitest';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import { build, run, serpPage } from '../fixtures.js';
import { PRESET_INPUTS } from './declared-pages.js';

const pages = () => build(normalizeTransform, { type: 'normalize', preset: 'serp_pages' });

describe('normalize serp_pages', () => {
  it('one row per page from general, with counts and next-page facts', async () => {
    const p1 = serpPage({
      query: 'bike repair',
      organic: [{ link: 'https://a.test/' }, { link: 'https://b.test/' }],
      oragnic: [{ link: 'https://a.test/' }, { link: 'https://c.test/' }],
    });
    const last = serpPage({ query: 'bike repair', page: 2, organic: [{ link: 'https://d.test/' }], hasNext: false });
    const fetchedAt = '2025-05-01T00:00:00Z';
    const { rows } = await run(pages(), [
      { ...p1, fetched_at: fetchedAt },
      { ...last, fetched_at: fetchedAt },
    ]);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      query: 'bike repair',
      page: 1,
      start: 0,
      search_engine: 'google',
      results_cnt: 123400,
      search_time: 0.42,
      language: 'en',
      location: 'Testland',
      mobile: false,
      basic_view: false,
      search_type: 'text',
      page_title: 'bike repair - Search',
      organic_count: 3,
      has_next_page: true,
      next_page_start: 10,
      request_id: 'req_1',
    });
    expect(rows[0]!.timestamp).toEqual(new Date('2025-03-01T10:00:00.000Z'));
    expect(rows[0]!.fetched_at).toEqual(new Date('2025-05-01T00:00:00Z'));
    expect(rows[1]).toMatchObject({ page: 2, organic_count: 1, has_next_page: false, next_page_start: null });
  });

  it('a page without general or pagination still gives a row of nulls', async () => {
    const bare = serpPage({ omit: ['general', 'pagination'], organic: [{ link: 'https://a.test/' }] });
    const { rows } = await run(pages(), [bare]);
    expect(rows[0]).toMatchObject({
      query: null,
      page: null,
      results_cnt: null,
      timestamp: null,
      has_next_page: false,
      organic_count: 1,
      fetched_at: null,
    });
  });

  it('bad timestamp text → null, not an error', async () => {
    const { rows, deadLetters } = await run(pages(), [serpPage({ timestamp: 'yesterday-ish' })]);
    expect(rows[0]!.timestamp).toBeNull();
    expect(deadLetters).toEqual([]);
  });

  it('keeps the sections no preset turns into rows: typed nested columns, the rest in other_sections', async () => {
    const page: Record<string, unknown> = {
      ...structuredClone(PRESET_INPUTS.serp_pages.full),
      html: '<html>the page again</html>',
    };
    const { rows } = await run(pages(), [page]);
    const r = rows[0]!;
    expect(r.navigation).toEqual([{ title: 'Images', href: expect.stringContaining('tbm=isch') }]);
    expect(r.knowledge).toMatchObject({
      title: 'Widget Shop',
      fid: '0x1234abcd:0xdeadbeef',
      rating: 4,
      reviews_cnt: 321,
      image_url: 'https://img.example.test/k.jpg',
      facts: [{ predicate: 'address', title: 'Address', value: '1 Main St', link: 'https://maps.example.test/a' }],
    });
    expect(r.videos).toEqual([
      {
        link: 'https://video.example.test/v1',
        title: 'Widgets explained',
        source: 'VideoSite',
        author: 'Widget Channel',
        date: '1 month ago',
        duration: '14:02',
        duration_sec: 842,
        has_image: true,
        image_url: 'https://img.example.test/v1.jpg',
        rank: 1,
        global_rank: 7,
      },
    ]);
    const paa = (r.people_also_ask as Record<string, unknown>[])[0]!;
    expect(paa).toMatchObject({ question: 'What is a widget?', answer: 'A small gadget.', rank: 1, global_rank: 3 });
    expect(paa.answers).toEqual([
      { type: 'answer', text: 'A small gadget.', rank: 1 },
      { type: 'list', text: '["one","two"]', rank: 2 },
    ]);
    expect(r.perspectives).toMatchObject([{ title: 'My widgets', author: 'widget_fan', rank: 1 }]);
    expect(r.top_stories).toMatchObject([{ title: 'Widgets in the news', source: 'News', global_rank: 5 }]);
    // Nothing dropped: sections without a column of their own are kept as they came; only `html` is left out.
    expect(r.other_sections).toEqual({ top_ads: page.top_ads, ai_overview: page.ai_overview });
  });

  it('a page with none of those sections has them null', async () => {
    const { rows } = await run(pages(), [serpPage({ omit: ['navigation'] })]);
    for (const k of ['navigation', 'knowledge', 'videos', 'people_also_ask', 'perspectives', 'top_stories'])
      expect(rows[0]![k]).toBeNull();
    expect(rows[0]!.other_sections).toBeNull();
  });
});
