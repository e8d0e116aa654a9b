import { describe, expect, it } from 'vitest';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import { build, run, serpPage } from '../fixtures.js';

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
});
