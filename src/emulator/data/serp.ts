/**
 * Deterministic structured search result pages for (seed, engine host, query, start).
 *
 * Each query has a plan: a finite number of organic results `total` (0–95; some queries have none, some exactly
 * a multiple of the page size) and a page size (usually 10, sometimes 9 or 11). The page at `start` holds results
 * `start … min(start + pageSize, total) - 1`; a `start` past the end gives an empty page.
 *
 * What a full crawl must collect: exactly `expectedOrganicLinks(seed, engine, query)`, the links of results
 * 0 … total-1 in order. Every one is distinct. On a page the results are split over `organic` and the misspelled
 * `oragnic` list; `oragnic` may also repeat a few of the page's `organic` links, so the union of both lists,
 * de-duplicated by link and read `organic` first, is exactly that page's slice of the expected links.
 *
 * Pagination: `next_page`, `next_page_link` and (for most queries) `next_page_start` are present only when a next
 * page exists; for about a fifth of the queries `next_page_start` is left out, so clients must fall back to the
 * `start=` of `next_page_link`. `knowledge` (with `fid`) is on the first page of about 40% of the queries that have
 * results, and also on later pages for half of those, so chained crawls must de-duplicate fids.
 *
 * Map search pages (`mapsPage`) list places instead, each with its own `fid` in `organic[]`, on one page.
 */
import { placeKind } from './reviews.js';
import { serpRng } from './serp-rng.js';
import { PLACE_TYPES } from './serp-maps.js';
import { imageItems, organicResult, relatedItems } from './serp-results.js';
import { capitalize, engineName, searchLink } from './serp-text.js';

export { mapsPage, mapsPlaceFids } from './serp-maps.js';
export { searchLink } from './serp-text.js';

export interface SerpQueryPlan {
  total: number;
  pageSize: number;
  /** The place's feature id when the query has a knowledge panel. */
  fid?: string;
  knowledgeOnLaterPages: boolean;
  /** Pages omit `next_page_start` (only `next_page` and `next_page_link` say where the next page is). */
  omitNextStart: boolean;
}

export interface SerpPageOptions {
  /** Time of the fetch (the page's `general.timestamp`). */
  now: Date;
  /** The target URL as requested (`input.original_url`). */
  originalUrl: string;
  requestId: string;
}

type Obj = Record<string, unknown>;

export function serpQueryPlan(seed: number, engine: string, query: string): SerpQueryPlan {
  const host = engine.toLowerCase();
  const r = serpRng(seed, 'serp-plan', host, query);
  const sizeRoll = r.next();
  const pageSize = sizeRoll < 0.7 ? 10 : sizeRoll < 0.85 ? 9 : 11;
  const kindRoll = r.next();
  let total: number;
  if (kindRoll < 0.1) total = 0;
  else if (kindRoll < 0.3) total = pageSize * r.int(1, Math.floor(95 / pageSize));
  else total = r.int(1, 95);
  const hasKnowledge = total > 0 && r.bool(0.4);
  const fid = hasKnowledge ? `0x${r.hex(16)}:0x${r.hex(16)}` : undefined;
  return { total, pageSize, fid, knowledgeOnLaterPages: r.bool(0.5), omitNextStart: r.bool(0.2) };
}

/** The feature id of the query's knowledge panel, if it has one. */
export function knowledgeFid(seed: number, engine: string, query: string): string | undefined {
  return serpQueryPlan(seed, engine, query).fid;
}

/** Every organic link a full crawl of the query collects, in result order (all distinct). */
export function expectedOrganicLinks(seed: number, engine: string, query: string): string[] {
  const { total } = serpQueryPlan(seed, engine, query);
  return Array.from({ length: total }, (_, i) => organicResult(seed, engine.toLowerCase(), query, i).link as string);
}

export function serpPage(seed: number, engine: string, query: string, start: number, opts: SerpPageOptions): Obj {
  const host = engine.toLowerCase();
  const plan = serpQueryPlan(seed, host, query);
  const { total, pageSize } = plan;
  const first = Math.max(0, Math.floor(start));
  const end = Math.min(first + pageSize, total);
  const results: Obj[] = [];
  for (let i = first; i < end; i++) results.push(organicResult(seed, host, query, i));

  const r = serpRng(seed, 'serp-page', host, query, first);
  // Split the page over the two lists; the second may repeat some of the first by link.
  const split = results.length >= 3 && r.bool(0.35) ? r.int(1, results.length - 1) : results.length;
  const organic = results.slice(0, split);
  const repeats =
    organic.length > 0 && r.bool(split < results.length ? 0.6 : 0.15) ? r.int(1, Math.min(2, organic.length)) : 0;
  const oragnic = [...organic.slice(organic.length - repeats), ...results.slice(split)];

  const images = results.length > 0 && r.bool(0.5) ? imageItems(r, query) : [];
  const related = results.length > 0 && r.bool(0.8) ? relatedItems(r, host, query, seed) : [];
  const imagesAfter = Math.min(3, organic.length);

  // Ranks: position within the list; global ranks: position across every list of the page, in page order.
  let g = 1;
  const ranked = (items: Obj[], at?: { index: number; insert: () => void }): Obj[] =>
    items.map((item, idx) => {
      if (at && idx === at.index) at.insert();
      return { ...item, rank: idx + 1, global_rank: g++ };
    });
  let imagesOut: Obj[] = [];
  const insertImages = (): void => {
    imagesOut = images.map((im, idx) => ({ ...im, rank: idx + 1, global_rank: g++ }));
  };
  const organicOut = ranked(organic, { index: imagesAfter, insert: insertImages });
  if (imagesOut.length === 0 && images.length > 0) insertImages();
  const oragnicOut = ranked(oragnic);
  const relatedOut = related.map((x, idx) => ({ ...x, rank: idx + 1, global_rank: g++ }));

  const page: Obj = {
    general: {
      search_engine: engineName(host),
      query,
      results_cnt: total === 0 ? 0 : total * 1000 + r.int(0, 999),
      search_time: Math.round((0.12 + r.next() * 0.7) * 100) / 100,
      language: 'en',
      location: 'United States',
      mobile: false,
      basic_view: false,
      search_type: 'text',
      page_title: `${query} - ${capitalize(engineName(host))} Search`,
      timestamp: opts.now.toISOString(),
    },
    input: { original_url: opts.originalUrl, request_id: opts.requestId },
    navigation: navigation(host, query),
    organic: organicOut,
  };
  if (oragnicOut.length > 0) page.oragnic = oragnicOut;
  page.images = imagesOut;
  page.pagination = pagination(seed, host, query, first, plan);
  page.related = relatedOut;
  if (plan.fid && (first === 0 || (plan.knowledgeOnLaterPages && first < total)))
    page.knowledge = knowledge(seed, host, query, plan.fid);
  return page;
}

function pagination(seed: number, host: string, query: string, start: number, plan: SerpQueryPlan): Obj {
  const { total, pageSize } = plan;
  const lastPage = Math.max(1, Math.ceil(total / pageSize));
  const current = Math.floor(start / pageSize) + 1;
  const pages: Obj[] = [];
  const from = Math.max(1, current - 4);
  const to = Math.min(lastPage, Math.max(current + 5, 10));
  for (let p = from; p <= to; p++) {
    if (p === current) continue;
    pages.push({ page: p, start: (p - 1) * pageSize, link: searchLink(host, query, (p - 1) * pageSize, seed) });
  }
  const out: Obj = { pages, current_page: current };
  const nextStart = start + pageSize;
  if (nextStart < total) {
    out.next_page = current + 1;
    if (!plan.omitNextStart) out.next_page_start = nextStart;
    out.next_page_link = searchLink(host, query, nextStart, seed);
  }
  return out;
}

function navigation(host: string, query: string): Obj[] {
  const q = encodeURIComponent(query).replace(/%20/g, '+');
  return [
    ['Images', 'isch'],
    ['News', 'nws'],
    ['Videos', 'vid'],
    ['Shopping', 'shop'],
    ['Maps', 'lcl'],
  ].map(([title, tbm]) => ({ title: title as string, href: `https://${host}/search?q=${q}&tbm=${tbm}` }));
}

function knowledge(seed: number, host: string, query: string, fid: string): Obj {
  const r = serpRng(seed, 'knowledge', host, query);
  const title = capitalize(query);
  const type = r.pick(PLACE_TYPES[placeKind(seed, fid)] ?? ['Place']);
  return {
    title,
    subtitle: type,
    type,
    description: `${title} is a ${type.toLowerCase()} known for its friendly staff and central location.`,
    description_source: 'Wikipedia',
    description_link: `https://en.wikipedia.org/wiki/${encodeURIComponent(title.replace(/ /g, '_'))}`,
    kgmid: `/g/11${r.hex(8)}`,
    link: `https://${host}/maps/place/${encodeURIComponent(query)}`,
    fid,
    rating: Math.round((3.5 + r.next() * 1.5) * 10) / 10,
    reviews_cnt: r.int(10, 20_000),
    facts: [
      { predicate: 'address', title: 'Address', value: `${r.int(1, 999)} Main St` },
      { predicate: 'phone', title: 'Phone', value: `+1 555-${r.int(100, 999)}-${r.int(1000, 9999)}` },
    ],
  };
}
