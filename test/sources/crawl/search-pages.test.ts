import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedOrganicLinks, serpQueryPlan } from '../../../src/emulator/data/serp.js';
import { pagePayload, type PagePosition } from '../../../src/sources/crawl/pager.js';
import {
  SERP_STATE_KEY,
  placeFids,
  nextSerpPage,
  organicCount,
  parseSerpUnitId,
  searchPages,
  serpChainKey,
  serpUnitId,
  wrongSerpPage,
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

describe('placeFids', () => {
  it('reads knowledge.fid from one panel or several', () => {
    expect(placeFids({ knowledge: { fid: '0x1:0x2' } })).toEqual(['0x1:0x2']);
    expect(placeFids({ knowledge: [{ fid: '0x1:0x2' }, { title: 'x' }, { fid: '0x3:0x4' }] })).toEqual([
      '0x1:0x2',
      '0x3:0x4',
    ]);
    expect(placeFids({ organic: [] })).toEqual([]);
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

describe('placeFids: every place-id carrier of the real shapes', () => {
  it('reads each result of a map search page (organic[].fid, also in oragnic), de-duplicated in page order', () => {
    const page = {
      general: { query: 'hotels in houston', gl: 'US' },
      organic: [
        { title: 'A', fid: '0xa:0x1', map_id: '0xa:0x1', rank: 1 },
        { title: 'no id', rank: 2 },
      ],
      oragnic: [
        { title: 'A again', fid: '0xa:0x1' },
        { title: 'B', fid: '0xb:0x2' },
      ],
    };
    expect(placeFids(page)).toEqual(['0xa:0x1', '0xb:0x2']);
  });

  it("reads a place page's own fid (hotel entity pages: top level and overview) beside a knowledge panel", () => {
    expect(placeFids({ overview: { title: 'H', fid: '0xc:0x3' }, fid: '0xc:0x3', prices: [] })).toEqual(['0xc:0x3']);
    expect(placeFids({ knowledge: { fid: '0xd:0x4' }, organic: [{ link: 'x', fid: '0xe:0x5' }] })).toEqual([
      '0xd:0x4',
      '0xe:0x5',
    ]);
  });
});

describe('wrongSerpPage: is the page the one asked for?', () => {
  const at: PagePosition = { subject: 'q', start: 10, page: 2 };

  it('pagination.current_page decides when present', () => {
    expect(wrongSerpPage({ pagination: { current_page: 2 }, organic: [{ rank: 1 }] }, at)).toBeUndefined();
    expect(wrongSerpPage({ pagination: { current_page: 1 }, organic: [{ rank: 1 }] }, at)).toMatch(
      /answered page 1 when page 2 \(start 10\) was asked for/,
    );
    expect(wrongSerpPage({ pagination: { current_page: '1' } }, at)).toMatch(/answered page 1/);
  });

  it('without pagination, a first rank that counts across pages must be start + 1', () => {
    expect(wrongSerpPage({ organic: [{ rank: 11 }, { rank: 12 }] }, at)).toBeUndefined();
    expect(wrongSerpPage({ organic: [{ rank: 21 }] }, at)).toMatch(/first result has rank 21.*starts at result 11/);
    expect(wrongSerpPage({ organic: [{ rank: 11 }] }, { subject: 'q', start: 0, page: 1 })).toMatch(/rank 11/);
  });

  it('a page that cannot tell is taken as asked (ranks restart at 1, no ranks, no results)', () => {
    expect(wrongSerpPage({ organic: [{ rank: 1 }] }, at)).toBeUndefined();
    expect(wrongSerpPage({ organic: [{ link: 'x' }] }, at)).toBeUndefined();
    expect(wrongSerpPage({}, at)).toBeUndefined();
  });
});

describe('searchPages, vertical maps', () => {
  const maps = searchPages({ engine: 'https://www.google.com', params: { hl: 'en' }, vertical: 'maps' });

  it('asks for the map search page of the query, with brd_json=1 and no start', () => {
    const url = new URL(maps.url({ subject: 'hotels in houston', start: 0, page: 1 }));
    expect(url.pathname).toBe('/maps/search/hotels%20in%20houston/');
    expect(Object.fromEntries(url.searchParams)).toEqual({ hl: 'en', brd_json: '1' });
    expect(maps.chainKey('x')).not.toBe(searchPages({ engine: 'https://www.google.com', params: {} }).chainKey('x'));
  });

  it('reads one page per query', async () => {
    const ctx = {} as Parameters<typeof maps.next>[3];
    const at = { subject: 'x', start: 0, page: 1 };
    expect(await maps.next({ organic: [{ fid: '0x1:0x2' }] }, at, 5, ctx)).toEqual({ stop: 'last_page' });
    expect(await maps.next({ organic: [] }, at, 5, ctx)).toEqual({ stop: 'empty_page' });
  });
});
