/**
 * The pager of search result pages (`serp`, and the SERP pages `reviews.from_serp` reads). A SERP page says where the
 * next page starts (`pagination.next_page_start`, else `start=` in `next_page_link`); the page size varies, so it is
 * read from the data and never assumed to be 10.
 */
import type { ExtraParams } from './config.js';
import { targetUrl, type PageOutcome, type PagePosition, type Pager } from './pager.js';

/** Where the `serp` crawl checkpoints its discovered pages. */
export const SERP_STATE_KEY = 'serp:discovered';

export interface SearchPagesOptions {
  /** Search engine URL the target URLs are built on. */
  engine: string;
  /** Extra query parameters of every target URL (`hl`, `gl`, …). */
  params: ExtraParams;
  /**
   * `maps`: the engine's map search (`{engine}/maps/search/<query>/`), whose results are places, each with its
   * `fid`. One page per query: the service no longer pages map results (`start` deprecated 2025-12-15).
   */
  vertical?: 'web' | 'maps';
}

/** Search pages of one engine: a chain per query, unit ids `serp:<engine-host>:<query>:start:<n>`. */
export function searchPages(opts: SearchPagesOptions): Pager {
  if (opts.vertical === 'maps') return mapsPages(opts);
  const host = engineHost(opts.engine);
  const extra = Object.entries(opts.params);
  return {
    name: 'serp',
    purpose: 'search page',
    ...queryChains(host),
    url: (at) => targetUrl(opts.engine, '/search', [['q', at.subject], ['start', at.start], ...extra]),
    next: async (payload, at, maxPages) => nextSerpPage(payload, at.start, at.page, maxPages),
    wrongPage: (payload, at) => wrongSerpPage(payload, at),
  };
}

/** Map search pages: a single page per query, unit ids `serp:<engine-host>/maps:<query>:start:0`. */
function mapsPages(opts: SearchPagesOptions): Pager {
  const host = `${engineHost(opts.engine)}/maps`;
  const extra = Object.entries(opts.params);
  return {
    name: 'maps',
    purpose: 'map search page',
    ...queryChains(host),
    url: (at) => targetUrl(opts.engine, `/maps/search/${encodeURIComponent(at.subject)}/`, extra),
    next: async (payload) => (organicCount(payload) === 0 ? { stop: 'empty_page' } : { stop: 'last_page' }),
  };
}

/**
 * What web and map search pages share: chains keyed by query under the `serp` crawl's state key, unit ids of the
 * host (`…/maps` for map pages), and the page as the row with its fetch time. Each pager adds only how it asks for a
 * page and whether it goes on.
 */
function queryChains(host: string): Pick<Pager, 'stateKey' | 'subjectParam' | 'chainKey' | 'unitId' | 'row'> {
  return {
    stateKey: SERP_STATE_KEY,
    subjectParam: 'query',
    chainKey: (query) => serpChainKey(host, query),
    unitId: (at) => serpUnitId(host, at.subject, at.start),
    row: (payload, _at, fetchedAt) => ({ ...payload, fetched_at: fetchedAt }),
  };
}

type Obj = Record<string, unknown>;

function asObject(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

function toInt(v: unknown): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The `start` query parameter of a (possibly relative) link. */
export function startFromLink(link: unknown): number | undefined {
  if (typeof link !== 'string' || link === '') return undefined;
  try {
    return toInt(new URL(link, 'https://placeholder.invalid').searchParams.get('start'));
  } catch {
    return undefined;
  }
}

/** Organic results on a SERP page: `organic` plus the misspelled `oragnic`, de-duplicated by link. */
export function organicCount(payload: Obj): number {
  const seen = new Set<string>();
  let n = 0;
  for (const key of ['organic', 'oragnic']) {
    const list = payload[key];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const link = asObject(item)?.link;
      if (typeof link === 'string') {
        if (seen.has(link)) continue;
        seen.add(link);
      }
      n++;
    }
  }
  return n;
}

/**
 * Where the SERP page after this one starts, or why there is none. `page` is 1-based.
 * Order of evidence: `next_page_start`; `start=` of `next_page_link`; the `pages[]` entry of `next_page`; and, when
 * the service says there is a next page but not where, this page's start plus the results it held.
 */
export function nextSerpPage(payload: Obj, start: number, page: number, maxPages: number): PageOutcome {
  const results = organicCount(payload);
  if (results === 0) return { stop: 'empty_page' };
  if (page >= maxPages) return { stop: 'max_pages' };
  const p = asObject(payload.pagination);
  if (p === undefined) return { stop: 'last_page' };
  let next = toInt(p.next_page_start) ?? startFromLink(p.next_page_link);
  const nextPage = toInt(p.next_page);
  if (next === undefined && nextPage !== undefined) {
    const entry = (Array.isArray(p.pages) ? p.pages : []).map(asObject).find((e) => toInt(e?.page) === nextPage);
    next = toInt(entry?.start) ?? startFromLink(entry?.link) ?? start + results;
  }
  if (next === undefined) return { stop: 'last_page' };
  // A next page that does not move forward would loop forever.
  if (next <= start) return { stop: 'no_progress' };
  return { next };
}

/**
 * Why a SERP page is not the page asked for, or undefined. `pagination.current_page` decides when present; else the
 * first organic result's `rank`, when it counts across pages (above 1), must be `start + 1`. A page that cannot
 * tell (no pagination, ranks restarting at 1 on every page) is taken as asked. docs/service.md §5.8.
 */
export function wrongSerpPage(payload: Obj, at: PagePosition): string | undefined {
  const current = toInt(asObject(payload.pagination)?.current_page);
  if (current !== undefined)
    return current === at.page
      ? undefined
      : `the service answered page ${current} when page ${at.page} (start ${at.start}) was asked for`;
  const first = [payload.organic, payload.oragnic].flatMap((l) => (Array.isArray(l) ? l.slice(0, 1) : []))[0];
  const rank = toInt(asObject(first)?.rank);
  if (rank === undefined || rank <= 1 || rank === at.start + 1) return undefined;
  return `the first result has rank ${rank}, but page ${at.page} starts at result ${at.start + 1}`;
}

/**
 * The place ids (`fid`) a search page carries, in page order without repeats: the knowledge panel's
 * (`knowledge.fid`; the block may be a list of panels), each result's on map search pages (`organic[].fid`, also
 * in `oragnic`), and a place page's own (`fid`, `overview.fid`: hotel entity pages). docs/service.md §5.7.
 */
export function placeFids(payload: Obj): string[] {
  const k = payload.knowledge;
  const carriers: unknown[] = [
    ...(Array.isArray(k) ? k : [k]),
    ...(Array.isArray(payload.organic) ? payload.organic : []),
    ...(Array.isArray(payload.oragnic) ? payload.oragnic : []),
    payload,
    payload.overview,
  ];
  const fids = carriers.map((c) => asObject(c)?.fid).filter((f): f is string => typeof f === 'string' && f !== '');
  return [...new Set(fids)];
}

/** Host of a search engine URL, lower case (`www.google.com`). */
export function engineHost(engine: string): string {
  return new URL(engine).host.toLowerCase();
}

/**
 * `serp:<engine-host>:<query>:start:<n>`. The query is percent-encoded (`encodeURIComponent`), so a `:` in it cannot
 * be confused with the separators, and the id is the same on every run.
 */
export function serpUnitId(host: string, query: string, start: number): string {
  return `${serpChainKey(host, query)}:start:${start}`;
}

/** The part of a SERP unit id shared by all pages of one query. */
export function serpChainKey(host: string, query: string): string {
  return `serp:${host}:${encodeURIComponent(query)}`;
}

export function parseSerpUnitId(id: string): { host: string; query: string; start: number } | undefined {
  const m = /^serp:([^:]+(?::\d+)?):([^:]*):start:(\d+)$/.exec(id);
  if (!m) return undefined;
  try {
    return { host: m[1]!, query: decodeURIComponent(m[2]!), start: Number(m[3]) };
  } catch {
    return undefined;
  }
}
