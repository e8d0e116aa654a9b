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
import { serpRng, type SerpRng } from './serp-rng.js';

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

/** A link to a result page of the query, shaped like the engine's own (extra parameters included). */
export function searchLink(engine: string, query: string, start: number, seed = 0): string {
  const q = encodeURIComponent(query).replace(/%20/g, '+');
  const token = serpRng(seed, 'sca', engine, query).hex(16);
  return `https://${engine}/search?q=${q}&sca_esv=${token}&start=${start}&sa=N`;
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

/**
 * The places a map search of the query lists (0–10; about one query in eight finds none), each with its feature id.
 * Ids are unique to (seed, host, query, index), so a place found by two queries is two places here.
 */
export function mapsPlaceFids(seed: number, engine: string, query: string): string[] {
  const host = engine.toLowerCase();
  const r = serpRng(seed, 'maps-plan', host, query);
  const n = r.bool(0.125) ? 0 : r.int(1, 10);
  return Array.from({ length: n }, (_, i) => {
    const f = serpRng(seed, 'maps-fid', host, query, i);
    return `0x${f.hex(16)}:0x${f.hex(16)}`;
  });
}

/**
 * A map search result page (`{engine}/maps/search/<query>/`), shaped like the service's: `general` (query, language,
 * country, country_code, gl) and `organic[]`, one place per result with its `fid` (also as `map_id`), address,
 * phone, categories, rating, review count, coordinates and links. No pagination block: map results are one page.
 */
export function mapsPage(seed: number, engine: string, query: string): Obj {
  const host = engine.toLowerCase();
  const organic = mapsPlaceFids(seed, host, query).map((fid, i) => {
    const r = serpRng(seed, 'maps-place', host, query, i);
    const kind = placeKind(seed, fid);
    const type = r.pick(PLACE_TYPES[kind] ?? ['Place']);
    const name = `${capitalize(query)} ${r.pick(['Central', 'Downtown', 'Riverside', 'Old Town', 'Station', 'Park'])}`;
    const site = `${slugify(name)}.example.com`;
    const place: Obj = {
      title: name,
      display_link: site,
      link: `https://${site}/`,
      address: `${r.int(1, 999)} ${r.pick(['Main St', 'Market St', 'High St', 'Oak Ave'])}`,
      phone: `+1555${r.int(1_000_000, 9_999_999)}`,
      category: [{ id: slugify(type).replace(/-/g, '_'), title: type }],
      summary: `${type} known for friendly staff`,
      rating: Math.round((3 + r.next() * 2) * 10) / 10,
      reviews_cnt: r.int(0, 9000),
      latitude: Math.round((r.next() * 120 - 60) * 1e6) / 1e6,
      longitude: Math.round((r.next() * 340 - 170) * 1e6) / 1e6,
      claimed: r.bool(0.7),
      fid,
      map_id: fid,
      map_id_encoded: `ChIJ${r.hex(23)}`,
      map_link: `https://${host}/maps/place/data=!3m1!4b1!4m2!3m1!1s${fid}`,
      rank: i + 1,
    };
    if (r.bool(0.6)) place.description = `${name}: a ${type.toLowerCase()} near ${place.address as string}.`;
    return place;
  });
  return {
    general: { query, language: 'en', country: 'United States', country_code: 'US', gl: 'US' },
    organic,
  };
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

const DOMAINS = [
  'en.wikipedia.org',
  'www.reddit.com',
  'www.youtube.com',
  'www.yelp.com',
  'www.tripadvisor.com',
  'medium.com',
  'www.nytimes.com',
  'www.theguardian.com',
  'github.com',
  'www.quora.com',
  'www.timeout.com',
  'www.eater.com',
  'stackoverflow.com',
  'www.bbc.com',
  'www.lonelyplanet.com',
  'www.cnet.com',
  'www.healthline.com',
  'www.allrecipes.com',
];

const SECTIONS = ['guides', 'wiki', 'blog', 'news', 'r', 'watch', 'biz', 'articles', 'reviews', 'learn'];

const TITLES = [
  'The best {q} in 2025',
  '{Q} - Wikipedia',
  '{Q}: a complete guide',
  'Top 10 {q} you should know',
  '{Q} | {S}',
  'Why {q} matters',
  '{Q} reviews and ratings',
  'Everything about {q}',
  '{Q} explained in 5 minutes',
  'Where to find {q}',
];

const PHRASES = [
  'Find out what locals recommend about',
  'A hands-on look at',
  'Compare prices, opening hours and reviews for',
  'Our editors picked the best options for',
  'Learn the history and background of',
  'Tips, tricks and common mistakes with',
  'Updated weekly with new information on',
  'Read what thousands of people say about',
];

const FILLER = [
  'Updated for this year.',
  'Includes maps and photos.',
  'Free to read.',
  'Written by experts.',
  'See the full list inside.',
  'Sources and further reading included.',
];

/** Result `i` of the query: its content depends only on (seed, host, query, i), so pages can be built alone. */
function organicResult(seed: number, host: string, query: string, i: number): Obj {
  const r = serpRng(seed, 'organic', host, query, i);
  const domain = DOMAINS[(hashIndex(query) + i * 7) % DOMAINS.length] as string;
  const section = r.pick(SECTIONS);
  const slug = `${slugify(query) || 'result'}-${i + 1}${r.hex(3)}`;
  const link = `https://${domain}/${section}/${slug}`;
  const source = sourceName(domain);
  const item: Obj = {
    link,
    source,
    display_link: `https://${domain} › ${section} › ${slug}`,
    title: r.pick(TITLES).replace('{q}', query).replace('{Q}', capitalize(query)).replace('{S}', source),
    description: `${r.pick(PHRASES)} ${query}. ${r.pick(FILLER)}`,
  };
  if (r.bool(0.5)) item.icon = dataUri(r, 'png', 24);
  if (r.bool(0.2)) {
    const image = dataUri(r, 'jpeg', 48);
    item.image = image;
    item.image_base64 = image;
  }
  if (domain === 'www.youtube.com') {
    const sec = r.int(45, 3600);
    item.duration = `${Math.floor(sec / 60)}:${String(sec % 60).padStart(2, '0')}`;
    item.duration_sec = sec;
  }
  if (r.bool(0.5))
    item.snippet_highlighted_words = query
      .split(/\s+/)
      .filter((w) => w.length > 2)
      .slice(0, 3);
  if (r.bool(0.3)) {
    item.extensions = Array.from({ length: r.int(1, 4) }, (_, k) => ({
      inline: r.bool(0.5),
      type: r.pick(['site_link', 'text', 'description']),
      text: r.pick(['Opening hours', 'Menu', 'Prices', 'Contact', 'About us', 'Reviews', 'Directions']),
      rank: k + 1,
    }));
  }
  return item;
}

function imageItems(r: SerpRng, query: string): Obj[] {
  return Array.from({ length: r.int(2, 5) }, (_, k) => {
    const domain = r.pick(DOMAINS);
    const image = dataUri(r, 'jpeg', 40);
    const item: Obj = {
      original_image: `https://${domain}/images/${slugify(query)}-${k + 1}.jpg`,
      link: `https://${domain}/${slugify(query)}/photo-${k + 1}`,
      title: `${capitalize(query)} photo ${k + 1}`,
      source: sourceName(domain),
      source_logo: dataUri(r, 'png', 16),
      image,
      image_alt: `${capitalize(query)} on ${sourceName(domain)}`,
      image_base64: image,
    };
    if (r.bool(0.3)) {
      const sec = r.int(10, 180) * 60;
      item.recipe = {
        rating: Math.round((3 + r.next() * 2) * 10) / 10,
        reviews_cnt: r.int(3, 4000),
        title: `Easy ${query}`,
        ingredients: r.pick([
          ['flour', 'butter', 'sugar', 'eggs'],
          ['rice', 'onion', 'garlic', 'stock'],
          ['pasta', 'tomatoes', 'basil', 'olive oil', 'parmesan'],
        ]),
        summary: `A simple take on ${query} for weeknights.`,
        duration: sec >= 3600 ? `${Math.floor(sec / 3600)} hr ${(sec % 3600) / 60} min` : `${sec / 60} min`,
        duration_sec: sec,
        volume: `${r.int(2, 8)} servings`,
      };
    }
    return item;
  });
}

function relatedItems(r: SerpRng, host: string, query: string, seed: number): Obj[] {
  const words = ['near me', 'open now', 'best', 'cheap', 'reviews', 'price', 'history', 'map', 'menu', 'hours'];
  const n = r.int(4, 8);
  const offset = r.int(0, words.length - 1);
  return Array.from({ length: n }, (_, k) => {
    const text = `${query} ${words[(offset + k) % words.length]}`;
    return { text, link: searchLink(host, text, 0, seed) };
  });
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

const PLACE_TYPES: Record<string, string[]> = {
  hotel: ['Hotel', 'Resort hotel', 'Boutique hotel'],
  attraction: ['Tourist attraction', 'Museum', 'Observation deck', 'Park'],
  other: ['Coffee shop', 'Restaurant', 'Bakery', 'Bookstore'],
};

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

function engineName(host: string): string {
  const labels = host.replace(/:\d+$/, '').split('.');
  return labels.length >= 2 ? (labels[labels.length - 2] as string) : host;
}

function sourceName(domain: string): string {
  const name = engineName(domain);
  return capitalize(name);
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function slugify(s: string): string {
  return s
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
}

function hashIndex(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h;
}

/** A tiny, valid-looking data URI (random payload bytes; nothing decodes it). */
function dataUri(r: SerpRng, kind: 'png' | 'jpeg', bytes: number): string {
  const buf = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) buf[i] = r.int(0, 255);
  return `data:image/${kind};base64,${buf.toString('base64')}`;
}
