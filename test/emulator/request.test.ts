import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { expectedOrganicLinks, knowledgeFid, serpQueryPlan } from '../../src/emulator/data/serp.js';
import {
  expectedReviewIds,
  placeKind,
  reviewIdsAt,
  hasShortPageBeforeLast,
  reviewPageSizes,
  reviewTotal,
} from '../../src/emulator/data/reviews.js';

const SEED = 11;
const ENGINE = 'www.google.com';
const AUTH = { authorization: 'Bearer emulator-key', 'content-type': 'application/json' };
type Obj = Record<string, any>;

let emu: EmulatorHandle;
beforeAll(async () => {
  // The review tests below are about paging by `start`: the switch that honours it whatever the emulated date.
  emu = await startEmulator({ seed: SEED, reviewPaging: 'start' });
});
afterAll(() => emu.close());

function post(body: unknown): Promise<Response> {
  return fetch(`${emu.url}/request`, {
    method: 'POST',
    headers: AUTH,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function searchUrl(q: string, start?: number, json = true): string {
  const s = start === undefined ? '' : `&start=${start}`;
  return `https://${ENGINE}/search?q=${encodeURIComponent(q)}${s}${json ? '&brd_json=1' : ''}`;
}

async function serp(q: string, start?: number): Promise<Obj> {
  const res = await post({ zone: 'serp_zone', url: searchUrl(q, start), format: 'raw' });
  expect(res.status).toBe(200);
  return (await res.json()) as Obj;
}

/** `organic` then `oragnic`, de-duplicated by link: what a normalizer keeps. */
function pageLinks(page: Obj): string[] {
  const seen = new Set<string>();
  for (const item of [...(page.organic ?? []), ...(page.oragnic ?? [])]) seen.add(item.link);
  return [...seen];
}

function nextStart(page: Obj): number | undefined {
  const p = page.pagination ?? {};
  if (typeof p.next_page_start === 'number') return p.next_page_start;
  if (typeof p.next_page_link === 'string') return Number(new URL(p.next_page_link).searchParams.get('start'));
  return undefined;
}

/** Follows pagination to the end; returns the links and the pages seen. */
async function crawl(q: string): Promise<{ links: string[]; pages: Obj[] }> {
  const links: string[] = [];
  const pages: Obj[] = [];
  let start: number | undefined = 0;
  while (start !== undefined) {
    const page = await serp(q, start);
    pages.push(page);
    links.push(...pageLinks(page));
    const next = nextStart(page);
    expect(next === undefined || next > start).toBe(true);
    start = next;
    expect(pages.length).toBeLessThan(20);
  }
  return { links, pages };
}

const QUERIES = Array.from({ length: 40 }, (_, i) => `query number ${i}`);

describe('POST /request: search pages', () => {
  it('returns the structured search result with every top-level key of the spec', async () => {
    const q = QUERIES.find((x) => serpQueryPlan(SEED, ENGINE, x).total > 12)!;
    const url = searchUrl(q, 0);
    const page = await serp(q, 0);
    for (const k of ['general', 'input', 'navigation', 'organic', 'images', 'pagination', 'related'])
      expect(page).toHaveProperty(k);
    const g = page.general;
    expect(g.query).toBe(q);
    expect(g.search_engine).toBe('google');
    expect(Number.isInteger(g.results_cnt)).toBe(true);
    expect(typeof g.search_time).toBe('number');
    for (const k of ['language', 'location', 'search_type', 'page_title']) expect(typeof g[k]).toBe('string');
    for (const k of ['mobile', 'basic_view']) expect(typeof g[k]).toBe('boolean');
    expect(new Date(g.timestamp).toISOString()).toBe(g.timestamp);
    expect(page.input.original_url).toBe(url);
    expect(page.input.request_id).toMatch(/^hl_/);
    for (const n of page.navigation) expect(Object.keys(n).sort()).toEqual(['href', 'title']);
    const item = page.organic[0];
    for (const k of ['link', 'source', 'display_link', 'title', 'description']) expect(typeof item[k]).toBe('string');
    expect(item.rank).toBe(1);
    expect(Number.isInteger(item.global_rank)).toBe(true);
    for (const r of page.related) {
      expect(typeof r.text).toBe('string');
      expect(Number.isInteger(r.rank) && Number.isInteger(r.global_rank)).toBe(true);
    }
    // Global ranks are distinct positions across every list of the page.
    const globals = [...page.organic, ...(page.oragnic ?? []), ...page.images, ...page.related].map(
      (x: Obj) => x.global_rank,
    );
    expect(new Set(globals).size).toBe(globals.length);
  });

  it('wraps the page in the json envelope with the body as a string', async () => {
    const q = QUERIES[3]!;
    const res = await post({ zone: 'serp_zone', url: searchUrl(q, 0), format: 'json' });
    expect(res.status).toBe(200);
    const env = (await res.json()) as Obj;
    expect(env.status_code).toBe(200);
    expect(env.headers['content-type']).toContain('application/json');
    expect(typeof env.body).toBe('string');
    const inner = JSON.parse(env.body);
    const raw = await serp(q, 0);
    expect(pageLinks(inner)).toEqual(pageLinks(raw));
    expect(inner.pagination).toEqual(raw.pagination);
  });

  it('ends pagination exactly: every organic result once, no next_page* on the last page', async () => {
    let withMultiple = 0;
    let withPartialLast = 0;
    for (const q of QUERIES.slice(0, 25)) {
      const plan = serpQueryPlan(SEED, ENGINE, q);
      const { links, pages } = await crawl(q);
      const expected = expectedOrganicLinks(SEED, ENGINE, q);
      expect(links).toEqual(expected);
      expect(new Set(links).size).toBe(links.length);
      const last = pages[pages.length - 1]!;
      for (const k of ['next_page', 'next_page_start', 'next_page_link']) expect(last.pagination).not.toHaveProperty(k);
      if (plan.total > 0) {
        expect(pages.length).toBe(Math.ceil(plan.total / plan.pageSize));
        if (plan.total % plan.pageSize === 0) withMultiple++;
        else withPartialLast++;
      }
      // Every page but the last is full: the page size is the data's, not a constant.
      for (const p of pages.slice(0, -1)) expect(pageLinks(p).length).toBe(plan.pageSize);
    }
    expect(withMultiple).toBeGreaterThan(0);
    expect(withPartialLast).toBeGreaterThan(0);
  });

  it('varies page size (9, 10, 11) and result counts (including 0) across queries', async () => {
    const plans = QUERIES.map((q) => ({ q, ...serpQueryPlan(SEED, ENGINE, q) }));
    expect(new Set(plans.map((p) => p.pageSize))).toEqual(new Set([9, 10, 11]));
    expect(new Set(plans.map((p) => p.total)).size).toBeGreaterThan(10);
    const empty = plans.find((p) => p.total === 0)!;
    const page = await serp(empty.q, 0);
    expect(page.organic).toEqual([]);
    expect(page.general.results_cnt).toBe(0);
    expect(page.pagination).not.toHaveProperty('next_page');
    const eleven = plans.find((p) => p.pageSize === 11 && p.total > 22)!;
    const second = await serp(eleven.q, 11);
    expect(pageLinks(second)).toEqual(expectedOrganicLinks(SEED, ENGINE, eleven.q).slice(11, 22));
    expect(second.pagination.current_page).toBe(2);
    expect(second.pagination.pages.find((x: Obj) => x.page === 3).start).toBe(22);
  });

  it('honours any start offset, and a start past the end gives an empty last page', async () => {
    const p = QUERIES.map((q) => ({ q, ...serpQueryPlan(SEED, ENGINE, q) })).find((x) => x.total > 30)!;
    const expected = expectedOrganicLinks(SEED, ENGINE, p.q);
    const page = await serp(p.q, 5);
    expect(pageLinks(page)).toEqual(expected.slice(5, 5 + p.pageSize));
    expect(nextStart(page)).toBe(5 + p.pageSize);
    const past = await serp(p.q, p.total + 20);
    expect(pageLinks(past)).toEqual([]);
    expect(past.pagination).not.toHaveProperty('next_page_link');
    // No start parameter means the first page.
    expect(pageLinks(await serp(p.q))).toEqual(expected.slice(0, p.pageSize));
  });

  it('splits results over organic and oragnic, sometimes repeating links across the two', async () => {
    let split = 0;
    let repeated = 0;
    for (const q of QUERIES.slice(0, 25)) {
      const { pages } = await crawl(q);
      for (const page of pages) {
        if (!page.oragnic) continue;
        split++;
        const organic = new Set(page.organic.map((x: Obj) => x.link));
        if (page.oragnic.some((x: Obj) => organic.has(x.link))) repeated++;
        page.oragnic.forEach((x: Obj, i: number) => expect(x.rank).toBe(i + 1));
      }
    }
    expect(split).toBeGreaterThan(0);
    expect(repeated).toBeGreaterThan(0);
  });

  it('carries knowledge.fid for some queries only', async () => {
    const withFid = QUERIES.filter((q) => knowledgeFid(SEED, ENGINE, q));
    expect(withFid.length).toBeGreaterThan(0);
    expect(withFid.length).toBeLessThan(QUERIES.length);
    const page = await serp(withFid[0]!, 0);
    expect(page.knowledge.fid).toBe(knowledgeFid(SEED, ENGINE, withFid[0]!));
    expect(page.knowledge.fid).toMatch(/^0x[0-9a-f]{16}:0x[0-9a-f]{16}$/);
    const without = QUERIES.find((q) => !knowledgeFid(SEED, ENGINE, q))!;
    expect(await serp(without, 0)).not.toHaveProperty('knowledge');
  });

  it('leaves next_page_start out for some queries, with the offset still in next_page_link', async () => {
    const q = QUERIES.find((x) => {
      const p = serpQueryPlan(SEED, ENGINE, x);
      return p.omitNextStart && p.total > p.pageSize;
    })!;
    const page = await serp(q, 0);
    expect(page.pagination).not.toHaveProperty('next_page_start');
    expect(page.pagination.next_page).toBe(2);
    expect(new URL(page.pagination.next_page_link).searchParams.get('start')).toBe(
      String(serpQueryPlan(SEED, ENGINE, q).pageSize),
    );
  });

  it('answers HTML without brd_json=1, and target errors in x-brd-* headers on HTTP 200', async () => {
    const html = await post({ zone: 'serp_zone', url: searchUrl(QUERIES[1]!, 0, false), format: 'raw' });
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(await html.text()).toMatch(/^<!doctype html>/);
    const other = await post({ zone: 'serp_zone', url: `https://${ENGINE}/maps?x=1&brd_json=1`, format: 'raw' });
    expect(other.status).toBe(200);
    expect(other.headers.get('x-brd-error')).toBeTruthy();
    expect(await other.text()).toBe('');
  });
});

describe('POST /request: reviews', () => {
  const fids = Array.from({ length: 60 }, (_, i) => `0x${(0x1000 + i).toString(16)}:0x${(0xabc0 + i).toString(16)}`);
  const reviewsUrl = (fid: string, start: number): string =>
    `https://${ENGINE}/reviews?fid=${encodeURIComponent(fid)}&start=${start}&brd_json=1`;

  async function reviewsAt(fid: string, start: number): Promise<Obj[]> {
    const res = await post({ zone: 'serp_zone', url: reviewsUrl(fid, start), format: 'raw' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Obj;
    expect(Object.keys(body)).toEqual(['reviews']);
    return body.reviews;
  }

  async function crawlReviews(fid: string): Promise<Obj[][]> {
    const pages: Obj[][] = [];
    for (let start = 0; ;) {
      const page = await reviewsAt(fid, start);
      pages.push(page);
      // No end marker, and the page size varies: only an empty page ends the place.
      if (page.length === 0) return pages;
      start += page.length;
    }
  }

  it('has every review field and every detail id of the spec', async () => {
    const fid = fids.find((f) => placeKind(SEED, f) === 'hotel' && reviewTotal(SEED, f) >= 15)!;
    const reviews = (await crawlReviews(fid)).flat();
    const ids = new Set<string>();
    let edited = 0;
    for (const r of reviews) {
      expect(typeof r.review_id).toBe('string');
      expect(Object.keys(r.reviewer).sort()).toEqual(['display_name', 'link', 'profile_photo_url']);
      for (const k of ['link', 'source', 'source_logo', 'comment']) expect(typeof r[k]).toBe('string');
      expect(r.rating).toMatch(/^[1-5]\/5$/);
      expect(r.created).toMatch(/^(Edited )?(a|an|\d+) (day|week|month|year)s? ago$/);
      if (r.created.startsWith('Edited')) edited++;
      if ('date' in r) expect(r.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      if ('review_reply' in r) expect(typeof r.review_reply_created).toBe('string');
      if ('photos' in r) expect(r.photos.every((p: unknown) => typeof p === 'string')).toBe(true);
      for (const d of r.details ?? []) {
        ids.add(d.id);
        expect(Object.keys(d).sort()).toEqual(['description', 'id', 'name', 'value']);
        if (d.id.startsWith('HOTELS_ASPECT_')) expect([1, 2, 3, 4, 5]).toContain(d.value);
        else expect(typeof d.value).toBe('string');
      }
    }
    for (const id of [
      'HOTELS_ASPECT_ROOMS',
      'HOTELS_ASPECT_SERVICES',
      'HOTELS_ASPECT_LOCATION',
      'HOTELS_PILOT_TRIP_TYPE',
      'HOTELS_PILOT_TRAVEL_GROUP_TYPE',
      'HOTELS_VIBE',
      'HOTELS_TIPS_TOPICS_ROOMS',
      'HOTELS_TIPS_TOPICS_NEARBY_ACTIVITIES',
      'HOTELS_TIPS_TOPICS_SAFETY',
      'HOTELS_TIPS_TOPICS_WALKABILITY',
    ])
      expect(ids).toContain(id);
    // Across many places some reviews are edited and some details use ids outside the spec's list.
    const all = (await Promise.all(fids.slice(0, 12).map((f) => reviewsAt(f, 0)))).flat();
    expect(edited + all.filter((r) => r.created.startsWith('Edited')).length).toBeGreaterThan(0);
    expect(all.some((r) => (r.details ?? []).some((d: Obj) => d.id.startsWith('TTD_')))).toBe(true);
  });

  it('is finite per fid: pages of 10, now and then 9 or 8 (never the first), then an empty page; every id once', async () => {
    const totals = fids.map((f) => reviewTotal(SEED, f));
    expect(new Set(totals).size).toBeGreaterThan(5);
    const sizes = (f: string): number[] => reviewPageSizes(SEED, f, reviewTotal(SEED, f));
    const uneven = fids.find((f) => hasShortPageBeforeLast(SEED, f, reviewTotal(SEED, f)))!;
    const exact = fids.find((f) => reviewTotal(SEED, f) > 0 && sizes(f).every((n) => n === 10))!;
    expect(uneven).toBeDefined();
    expect(exact).toBeDefined();
    for (const fid of [uneven, exact]) {
      const pages = await crawlReviews(fid);
      expect(pages.map((p) => p.length)).toEqual([...sizes(fid), 0]);
      expect(pages[0]!.length).toBe(Math.min(10, reviewTotal(SEED, fid)));
      for (const p of pages.slice(0, -2)) expect(p.length).toBeGreaterThanOrEqual(8);
      const ids = pages.flat().map((r) => r.review_id);
      expect(ids).toEqual(expectedReviewIds(SEED, fid));
      expect(new Set(ids).size).toBe(ids.length);
    }
    expect(await reviewsAt(uneven, 500)).toEqual([]);
  });

  it('by default pages by start before the maps start deprecation (2025-12-15), repeats the first page after', async () => {
    const fid = fids.find((f) => reviewTotal(SEED, f) > 20)!;
    const second = async (now: string): Promise<string[]> => {
      const dated = await startEmulator({ seed: SEED, now: Date.parse(now) });
      try {
        const res = await fetch(`${dated.url}/request`, {
          method: 'POST',
          headers: AUTH,
          body: JSON.stringify({ zone: 'serp_zone', url: reviewsUrl(fid, 10), format: 'raw' }),
        });
        return ((await res.json()) as Obj).reviews.map((r: Obj) => r.review_id as string);
      } finally {
        await dated.close();
      }
    };
    // A pinned clock: places have gained reviews by then (shown first).
    const before = Date.parse('2025-12-14T23:30:00Z');
    const after = Date.parse('2025-12-15T00:30:00Z');
    expect(await second(new Date(before).toISOString())).toEqual(reviewIdsAt(SEED, fid, before).slice(10, 20));
    expect(await second(new Date(after).toISOString())).toEqual(reviewIdsAt(SEED, fid, after).slice(0, 10));
  });
});

describe('POST /request: errors', () => {
  it('answers an unknown zone with 400 plain text', async () => {
    const res = await post({ zone: 'nope', url: searchUrl('x', 0), format: 'raw' });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('zone "nope" not found');
  });

  it('answers a zone of another type with 403 and x-brd-err-code client_10090', async () => {
    const res = await post({ zone: 'static_zone', url: searchUrl('x', 0), format: 'raw' });
    expect(res.status).toBe(403);
    expect(res.headers.get('x-brd-err-code')).toBe('client_10090');
    expect(res.headers.get('x-brd-error')).toContain('static_zone');
  });

  it.each([
    ['invalid JSON', '{"zone":'],
    ['missing url', { zone: 'serp_zone', format: 'raw' }],
    ['unknown format', { zone: 'serp_zone', url: searchUrl('x'), format: 'xml' }],
    ['not a URL', { zone: 'serp_zone', url: 'not a url', format: 'raw' }],
  ])('answers a malformed body (%s) with 400 validation', async (_name, body) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'Request validation failed', error_code: 'validation' });
  });

  it('counts requests per route and returns to zero in flight', async () => {
    await Promise.all(QUERIES.slice(0, 6).map((q) => serp(q, 0)));
    expect(emu.stats.routes['POST /request']).toBeGreaterThan(6);
    expect(emu.stats.routeMaxInFlight['POST /request']).toBeGreaterThanOrEqual(1);
    expect(emu.stats.inFlight).toBe(0);
  });
});

describe('what a page costs (GET /_emulator/counters `requests`)', () => {
  it('bills a page answered, never a refusal: a target error, a query the engine cuts, a malformed body, a wrong zone', async () => {
    const billed = async (): Promise<number> =>
      ((await (await fetch(`${emu.url}/_emulator/counters`)).json()) as { requests: number }).requests;
    const before = await billed();
    await serp('coffee roasters portland');
    expect(await billed()).toBe(before + 1);
    const refusals = [
      { zone: 'serp_zone', url: `https://${ENGINE}/nowhere?q=x&brd_json=1`, format: 'raw' },
      { zone: 'serp_zone', url: searchUrl(Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')), format: 'raw' },
      { zone: 'serp_zone', url: 'not a url', format: 'raw' },
      { zone: 'no_such_zone', url: searchUrl('x'), format: 'raw' },
    ];
    for (const body of refusals) {
      const res = await post(body);
      expect(res.status === 200 ? res.headers.get('x-brd-error') : res.status, JSON.stringify(body)).toBeTruthy();
    }
    expect(await billed()).toBe(before + 1);
  });
});
