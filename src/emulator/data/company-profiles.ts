/**
 * Company profile records (dataset `gd_l1vikfnt1wgvvqz95w`), shaped like the spec's "Company profile record": every
 * field of the spec, nested arrays of varying length (employees, similar, updates with optional fields present
 * only sometimes), nulls where the service puts them (specialties, stock_info when absent; some slogans, funding,
 * founding years), plus the scrape `timestamp` real records carry.
 *
 * `companyProfile(seed, index)` is a pure function of its arguments (the bench and tests build the same records
 * without a server). Ids are unique per index. About 2.9 KB of JSONL per record on average, generated in
 * microseconds: string pools and one integer-keyed RNG per record, no per-record regexes.
 */
import {
  COUNTRIES,
  COUNTRY_WEIGHTS,
  FIRST_NAMES,
  INDUSTRIES,
  JOB_TITLES,
  LAST_NAMES,
  NAME_ADJECTIVES,
  STREETS,
  SYLLABLES,
  groupThousands,
  slugify,
} from './dataset-vocab.js';
import { permute24, recordRng, type RecordRng } from './record-rng.js';
import {
  AUDIENCES,
  COUNTS,
  EMPLOYEE_WEIGHTS,
  EXCHANGES,
  GOALS,
  HASHTAGS,
  INVESTORS,
  LOCATION_WEIGHTS,
  ORG_TYPES,
  ORG_WEIGHTS,
  POST_BODIES,
  POST_OPENERS,
  POST_TIMES,
  ROUND_TYPES,
  SIMILAR_WEIGHTS,
  SIZES,
  SIZE_WEIGHTS,
  SLOGANS,
  SPECIALTIES,
  SUFFIXES,
  UPDATE_WEIGHTS,
  VALUES,
} from './company-profile-vocab.js';

export { companyProfileFields } from './company-profile-fields.js';

export const COMPANY_PROFILES_ID = 'gd_l1vikfnt1wgvvqz95w';

const SITE = 'https://www.profilehub.example';
const CDN = 'https://media.profilehub-cdn.example/dms/image';
const REGISTRY = 'https://www.venturebase.example/organization';

export type CompanyProfile = Record<string, unknown>;

// Streams of the record RNG (sub-parts stay independent of each other).
const S_MAIN = 1;

const COLLECTED_FROM = Date.UTC(2025, 0, 6);

/** One record: a pure function of (seed, index). */
export function companyProfile(seed: number, index: number): CompanyProfile {
  const r = recordRng(seed, S_MAIN, index);
  const [industry, nouns, sphere] = r.pick(INDUSTRIES);
  const [name, slug] = companyName(r, nouns);
  const companyId = String(1000 + permute24(index, seed));
  const id = `${slug}-${companyId}`;
  const url = `${SITE}/company/${id}`;

  const country = r.weighted(COUNTRIES, COUNTRY_WEIGHTS);
  const [city, region] = r.pick(country.cities);
  const nLocations = r.weighted(COUNTS, LOCATION_WEIGHTS);
  const locations: string[] = [];
  const formatted: string[] = [];
  const directions: { directions_url: string }[] = [];
  for (let i = 0; i < nLocations; i++) {
    const [c, reg] = i === 0 ? [city, region] : r.pick(country.cities);
    const street = `${r.int(1, 999)} ${r.pick(STREETS)}`;
    const postcode = String(r.int(10000, 99999));
    locations.push(`${street} ${c}, ${reg} ${postcode}, ${country.code}`);
    formatted.push(`${street}, ${c}, ${reg} ${postcode}, ${country.code}`);
    directions.push({
      directions_url: `https://maps.example.com/?where=${encodeURIComponent(`${street} ${c} ${postcode} ${reg} ${country.code}`).replaceAll('%20', '+')}`,
    });
  }

  const size = r.weighted(SIZES, SIZE_WEIGHTS);
  const employeesCount = r.int(size[1], size[2]);
  const orgType = r.weighted(ORG_TYPES, ORG_WEIGHTS);
  const founded = r.bool(0.9) ? r.int(orgType === 'Educational' ? 1850 : 1950, 2024) : null;
  const followers = r.logInt(1.5, 6.3);
  const slogan = r.bool(0.6) ? r.pick(SLOGANS) : null;
  const about = aboutText(r, name, industry, sphere, city, founded);
  const specialties = r.bool(0.65) ? pickSome(r, SPECIALTIES, r.int(2, 6)).join(', ') : null;
  const isPublic = orgType === 'Public Company';

  const record: CompanyProfile = {
    input: { url },
    id,
    name,
    country_code: r.bool(0.02) ? null : country.code,
    locations,
    followers,
    employees_in_platform: Math.max(1, Math.floor(employeesCount * (0.2 + r.next() * 0.6))),
    about,
    specialties,
    company_size: size[0],
    organization_type: orgType,
    industries: industry,
    website: r.bool(0.95) ? `https://www.${slug.replaceAll('-', '')}.example` : null,
    registry_url: `${REGISTRY}/${id}`,
    founded,
    company_id: companyId,
    employees: employees(r, name, r.weighted(COUNTS, EMPLOYEE_WEIGHTS)),
    headquarters: `${city}, ${region}`,
    image: `${CDN}/${r.token(22)}/image-scale_191_1128/0/${r.int(1.5e12, 1.73e12)}`,
    logo: `${CDN}/${r.token(22)}/company-logo_200_200/0/${r.int(1.5e12, 1.73e12)}`,
    similar: similar(r, r.weighted(COUNTS, SIMILAR_WEIGHTS)),
    url,
    updates: updates(r, name, slug, r.weighted(COUNTS, UPDATE_WEIGHTS)),
    slogan,
    affiliated: r.bool(0.1) ? similar(r, r.int(1, 2)) : [],
    investors: r.bool(0.2) ? pickSome(r, INVESTORS, r.int(1, 3)) : [],
    funding: r.bool(0.45) ? funding(r, founded) : null,
    formatted_locations: formatted,
    stock_info: isPublic && r.bool(0.7) ? stockInfo(r, name) : null,
    get_directions_url: directions,
    description: `${name} | ${groupThousands(followers)} followers.${slogan ? ` ${slogan} |` : ''} ${about.slice(0, 60)}`,
    sphere,
    type: 'Company',
    timestamp: new Date(COLLECTED_FROM + r.int(0, 30 * 86_400_000)).toISOString(),
  };
  return record;
}

/** Records `start` (inclusive) to `end` (exclusive), generated as iterated. */
export function* companyProfiles(seed: number, start = 0, end = Infinity): Generator<CompanyProfile> {
  for (let i = start; i < end; i++) yield companyProfile(seed, i);
}

/** A company name and its URL slug, built from pool words whose slugs are memoised (no per-record regex). */
function companyName(r: RecordRng, nouns: readonly string[]): [string, string] {
  const u = r.next();
  if (u < 0.4) return join([r.pick(NAME_ADJECTIVES), r.pick(nouns)]);
  if (u < 0.65) {
    const coined = r.pick(SYLLABLES) + r.pick(SYLLABLES) + r.pick(SYLLABLES);
    const word = `${coined[0]!.toUpperCase()}${coined.slice(1)}`;
    return r.bool(0.5) ? join([word, r.pick(nouns)]) : [word, coined];
  }
  if (u < 0.85) return join([r.pick(NAME_ADJECTIVES), r.pick(nouns), r.pick(SUFFIXES)]);
  const [name, slug] = join([r.pick(LAST_NAMES), r.pick(LAST_NAMES), r.pick(nouns)]);
  return [name.replace(' ', ' & '), slug];
}

function join(words: string[]): [string, string] {
  let slug = '';
  for (const w of words) {
    const s = slugOf(w);
    if (s) slug = slug ? `${slug}-${s}` : s;
  }
  return [words.join(' '), slug];
}

const slugs = new Map<string, string>();
/** Slugs of pool words (a bounded set), memoised. */
function slugOf(word: string): string {
  let s = slugs.get(word);
  if (s === undefined) slugs.set(word, (s = slugify(word)));
  return s;
}

function aboutText(
  r: RecordRng,
  name: string,
  industry: string,
  sphere: string,
  city: string,
  founded: number | null,
): string {
  const parts = [
    `${name} is a ${sphere.toLowerCase()} organisation based in ${city}, working in ${industry.toLowerCase()}.`,
    founded === null ? '' : ` Since ${founded}, we have helped ${r.pick(AUDIENCES)} ${r.pick(GOALS)}.`,
  ];
  const n = r.int(1, 4);
  for (let i = 0; i < n; i++) {
    const u = r.next();
    if (u < 0.25) parts.push(` Our teams work with ${r.pick(AUDIENCES)} who want to ${r.pick(GOALS)}.`);
    else if (u < 0.5) {
      const [a, b] = pickSome(r, VALUES, 2);
      parts.push(` We believe in ${a} and ${b}, and it shows in our work.`);
    } else if (u < 0.75)
      parts.push(` Today more than ${groupThousands(r.int(2, 900) * 10)} customers rely on us to ${r.pick(GOALS)}.`);
    else parts.push(` Interested in joining us? We are always looking for people who care about ${r.pick(VALUES)}.`);
  }
  return parts.join('');
}

function employees(r: RecordRng, company: string, n: number): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  for (let i = 0; i < n; i++) {
    const first = r.pick(FIRST_NAMES);
    const last = r.pick(LAST_NAMES);
    out.push({
      img: `${CDN}/${r.token(22)}/profile-displayphoto-shrink_100_100/0/${r.int(1.5e12, 1.73e12)}?e=2147483647&v=beta`,
      link: `${SITE}/in/${slugOf(first)}-${slugOf(last)}-${r.alnum(8)}`,
      subtitle: `${r.pick(JOB_TITLES)} at ${company}`,
      title: `${first} ${last}`,
    });
  }
  return out;
}

function similar(r: RecordRng, n: number): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  for (let i = 0; i < n; i++) {
    const [industry, nouns] = r.pick(INDUSTRIES);
    const [name, slug] = companyName(r, nouns);
    const item: Record<string, string> = {
      Links: `${SITE}/company/${slug}`,
      subtitle: industry,
      title: name,
    };
    if (r.bool(0.6)) {
      const [city, region] = r.pick(r.weighted(COUNTRIES, COUNTRY_WEIGHTS).cities);
      item.location = `${city}, ${region}`;
    }
    out.push(item);
  }
  return out;
}

function updates(r: RecordRng, company: string, slug: string, n: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const u: Record<string, unknown> = {
      title: company,
      text: `${r.pick(POST_OPENERS)} ${r.pick(POST_BODIES)} ${pickSome(r, HASHTAGS, r.int(1, 3)).join(' ')}`,
      time: r.pick(POST_TIMES),
    };
    // Optional fields appear only on some posts, as on the service.
    if (r.bool(0.8)) {
      u.likes_count = r.logInt(0, 3.5);
      u.comments_count = r.logInt(0, 2);
    }
    if (r.bool(0.25)) u.external_link = `https://www.${slug.replaceAll('-', '')}.example/news/${r.alnum(6)}`;
    if (r.bool(0.3))
      u.images = Array.from(
        { length: r.int(1, 2) },
        () => `${CDN}/${r.token(22)}/feedshare-shrink_800/0/${r.token(8)}`,
      );
    if (r.bool(0.1)) u.videos = r.bool(0.5) ? [] : [`https://video.profilehub-cdn.example/playlist/${r.token(16)}.mp4`];
    out.push(u);
  }
  return out;
}

function funding(r: RecordRng, founded: number | null): Record<string, unknown> {
  const from = Date.UTC(Math.max(founded ?? 2005, 2005), 0, 1);
  const day = Math.floor((from + r.next() * (Date.UTC(2025, 0, 1) - from)) / 86_400_000);
  return {
    last_round_date: new Date(day * 86_400_000).toISOString(),
    last_round_type: r.pick(ROUND_TYPES),
    rounds: r.int(1, 8),
  };
}

function stockInfo(r: RecordRng, name: string): Record<string, string> {
  const ticker = name
    .replace(/[^A-Za-z]/g, '')
    .slice(0, 4)
    .toUpperCase();
  const price = r.int(500, 50_000) / 100;
  const change = (r.next() - 0.5) * price * 0.06;
  return {
    id: ticker,
    datetime: 'January 3, 2025',
    stock_exchange: r.pick(EXCHANGES),
    stock_ticker: ticker,
    stock_price: `$${price.toFixed(2)}`,
    stock_price_change: `${change.toFixed(2)} (${((change / price) * 100).toFixed(2)}%)`,
  };
}

function pickSome(r: RecordRng, items: readonly string[], n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n * 2 && out.length < n; i++) {
    const x = r.pick(items);
    if (!out.includes(x)) out.push(x);
  }
  return out;
}
