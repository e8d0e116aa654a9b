import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedOrganicLinks, serpQueryPlan } from '../../../src/emulator/data/serp.js';
import { pagePayload, type PagePosition } from '../../../src/sources/crawl/pager.js';
import {
  SERP_STATE_KEY,
  knowledgeFids,
  nextSerpPage,
  organicCount,
  parseSerpUnitId,
  searchPages,
  serpChainKey,
  serpUnitId,
} from '../../../src/sources/crawl/search-pages.js';
import { sourceContext, startHarness, type Harness } from '../crawl-harness.js';

const items = (n: number, prefix = 'https://example.test/'): { link: string }[] =>
  Array.from({ length: n }, (_, i) => ({ link: `${prefix}${i}` }));

describe('nextSerpPage', () => {
  it('follows next_page_start, whatever the page size', () => {
    const page = { organic: items(7), pagination: { next_page_start: 7, next_page_link: 'https://g/search?start=99' } };
    expect(nextSerpPage(page, 0, 1, 5)).toEqual({ next: 7 });
  });

  it('falls back to start= of next_page_link', () => {
    const page = { organic: items(4), pagination: { next_page: 3, next_page_link: '/search?q=x&start=23&sa=N' } };
    expect(nextSerpPage(page, 13, 2, 5)).toEqual({ next: 23 });
  });

  it('uses the pages[] entry, then the result count, when only next_page is given', () => {
    const withPages = { organic: items(9), pagination: { next_page: 2, pages: [{ page: 2, start: 9 }] } };
    expect(nextSerpPage(withPages, 0, 1, 5)).toEqual({ next: 9 });
    const bare = { organic: items(8), oragnic: items(3, 'https://other.test/'), pagination: { next_page: 2 } };
    expect(nextSerpPage(bare, 0, 1, 5)).toEqual({ next: 11 });
  });

  it('stops at the last page, an empty page, max_pages, and a page that does not move forward', () => {
    expect(nextSerpPage({ organic: items(3), pagination: { current_page: 4 } }, 30, 4, 10)).toEqual({
      stop: 'last_page',
    });
    expect(nextSerpPage({ organic: [], pagination: { next_page_start: 10 } }, 0, 1, 10)).toEqual({
      stop: 'empty_page',
    });
    expect(nextSerpPage({ organic: items(10), pagination: { next_page_start: 50 } }, 40, 5, 5)).toEqual({
      stop: 'max_pages',
    });
    expect(nextSerpPage({ organic: items(10), pagination: { next_page_start: 10 } }, 10, 2, 5)).toEqual({
      stop: 'no_progress',
    });
  });

  it('counts organic and oragnic results once each', () => {
    expect(organicCount({ organic: items(5), oragnic: items(7) })).toBe(7);
  });
});

describe('serp unit ids', () => {
  it('round-trips queries with separators and unicode', () => {
    for (const q of ['coffee roasters portland', 'a:b:start:3', 'café & crème/100%', '']) {
      const id = serpUnitId('www.google.com', q, 20);
      expect(id).toMatch(/^serp:www\.google\.com:[^:]*:start:20$/);
      expect(parseSerpUnitId(id)).toEqual({ host: 'www.google.com', query: q, start: 20 });
    }
    expect(parseSerpUnitId(serpUnitId('localhost:8080', 'x', 0))).toEqual({
      host: 'localhost:8080',
      query: 'x',
      start: 0,
    });
  });
});

describe('knowledgeFids', () => {
  it('reads knowledge.fid from one panel or several', () => {
    expect(knowledgeFids({ knowledge: { fid: '0x1:0x2' } })).toEqual(['0x1:0x2']);
    expect(knowledgeFids({ knowledge: [{ fid: '0x1:0x2' }, { title: 'x' }, { fid: '0x3:0x4' }] })).toEqual([
      '0x1:0x2',
      '0x3:0x4',
    ]);
    expect(knowledgeFids({ organic: [] })).toEqual([]);
  });
});

describe('searchPages (pager strategy)', () => {
  const pager = searchPages({ engine: 'https://WWW.Google.com', params: { hl: 'en', gl: 'us' } });
  const at: PagePosition = { subject: 'ramen: berlin', start: 20, page: 3 };

  it('names a page by engine host, query and offset, and asks for it with the extra params after q and start', () => {
    expect(pager).toMatchObject({ name: 'serp', stateKey: SERP_STATE_KEY, subjectParam: 'query' });
    expect(pager.unitId(at)).toBe(serpUnitId('www.google.com', 'ramen: berlin', 20));
    expect(pager.chainKey(at.subject)).toBe(serpChainKey('www.google.com', 'ramen: berlin'));
    expect(pager.url(at)).toBe('https://www.google.com/search?q=ramen%3A+berlin&start=20&hl=en&gl=us&brd_json=1');
  });

  it('yields the page as returned plus its fetch time, without changing the payload', () => {
    const payload = { organic: items(2) };
    expect(pager.row(payload, at, '2025-01-02T03:04:05.000Z')).toEqual({
      organic: items(2),
      fetched_at: '2025-01-02T03:04:05.000Z',
    });
    expect(payload).toEqual({ organic: items(2) });
  });

  describe('on the emulator', () => {
    const SEED = 5;
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness({ seed: SEED });
    });
    afterAll(() => h.close());

    it('pages a query to exactly its last page, by the page size the data shows', async () => {
      const candidates = Array.from({ length: 300 }, (_, i) => `walk ${i}`);
      const query = candidates.find((q) => {
        const p = serpQueryPlan(SEED, 'www.google.com', q);
        return p.omitNextStart && p.pageSize !== 10 && p.total > 2 * p.pageSize;
      })!;
      expect(query).toBeDefined();
      const plan = serpQueryPlan(SEED, 'www.google.com', query);
      const google = searchPages({ engine: 'https://www.google.com', params: {} });
      const ctx = sourceContext(h);
      const starts: number[] = [];
      const links: string[] = [];
      for (let pos: PagePosition = { subject: query, start: 0, page: 1 }; ;) {
        starts.push(pos.start);
        const res = await h.client.request.page({ zone: 'serp_zone', url: google.url(pos), format: 'raw' });
        const payload = pagePayload(res.payload, google.unitId(pos));
        const onPage = new Set<string>();
        for (const key of ['organic', 'oragnic'])
          for (const item of (payload[key] as { link?: string }[] | undefined) ?? [])
            if (item.link) onPage.add(item.link);
        links.push(...onPage);
        const outcome = await google.next(payload, pos, 100, ctx);
        if ('stop' in outcome) break;
        pos = { subject: query, start: outcome.next, page: pos.page + 1 };
      }
      const pages = Math.ceil(plan.total / plan.pageSize);
      expect(starts).toEqual(Array.from({ length: pages }, (_, i) => i * plan.pageSize));
      expect(links.length).toBe(new Set(links).size);
      expect([...links].sort()).toEqual([...expectedOrganicLinks(SEED, 'www.google.com', query)].sort());
      // The search pager keeps nothing of its own in the run's state.
      expect(ctx.state.get(SERP_STATE_KEY)).toBeUndefined();
    });
  });
});
