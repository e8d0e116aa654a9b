/**
 * Map search pages (`{engine}/maps/search/<query>/`): the places a query finds, each with its feature id. A page of
 * its own kind (one page, no pagination, places instead of links), so it lives beside the result page (serp.ts)
 * rather than inside it; the kinds of place are shared with the result page's knowledge panel.
 */
import { placeKind } from './reviews.js';
import { serpRng } from './serp-rng.js';
import { capitalize, slugify } from './serp-text.js';

type Obj = Record<string, unknown>;

/** The kinds of place a fid's kind (reviews.ts `placeKind`) is shown as. */
export const PLACE_TYPES: Record<string, string[]> = {
  hotel: ['Hotel', 'Resort hotel', 'Boutique hotel'],
  attraction: ['Tourist attraction', 'Museum', 'Observation deck', 'Park'],
  other: ['Coffee shop', 'Restaurant', 'Bakery', 'Bookstore'],
};

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
