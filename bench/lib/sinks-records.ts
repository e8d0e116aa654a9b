/**
 * Deterministic company-profile-shaped records for the sink benchmarks: nested lists of structs, optional fields,
 * nulls, long text, timestamps. About 2.9 KB of JSON per record, like the 200k-record / 576 MB snapshot the
 * targets were measured on. Rows come out typed the way the `company_profile` normalizer leaves them
 * (timestamps as `Date`), so sinks see what they see in production.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { Row } from '../../src/core/types.js';

/** mulberry32: tiny, fast and good enough to vary shapes. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'data food global brand market service team growth people product quality customer build future world leading company innovation partner community health energy digital platform trusted sustainable delicious operations careers'.split(
    ' ',
  );
const COUNTRIES = ['US', 'GB', 'DE', 'FR', 'IN', 'BR', 'NL', 'ES', 'IT', 'CA', 'AU', 'JP'];
const SIZES = ['2-10 employees', '11-50 employees', '51-200 employees', '1,001-5,000 employees', '10,001+ employees'];

function text(r: () => number, words: number): string {
  let s = '';
  for (let i = 0; i < words; i++) s += (i ? ' ' : '') + WORDS[Math.floor(r() * WORDS.length)];
  return s;
}

const TOKEN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Random URL tokens, as real image links carry: they keep gzip ratios near the real data's (~4 at level 6). */
function token(r: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += TOKEN_CHARS[Math.floor(r() * 64)];
  return s;
}

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

/** Record `i` of the data set; the same `i` always gives the same record. */
export function companyProfile(i: number): Row {
  const r = rng(i * 7919 + 1);
  const id = `company-${i}`;
  const cc = pick(r, COUNTRIES);
  const employees = Array.from({ length: Math.floor(r() * 5) }, (_, k) => ({
    img: `https://media.example.com/p/${i}-${k}.jpg?e=2147483647&v=beta&t=${token(r, 43)}`,
    link: `https://example.com/in/person-${i}-${k}`,
    subtitle: text(r, 6),
    title: `Person ${i}-${k}`,
  }));
  const similar = Array.from({ length: 2 + Math.floor(r() * 4) }, (_, k) => ({
    Links: `https://example.com/company/similar-${i}-${k}`,
    subtitle: text(r, 3),
    title: text(r, 2),
    location: r() < 0.5 ? `${text(r, 1)}, ${cc}` : null,
  }));
  const updates = Array.from({ length: Math.floor(r() * 3) }, (_, k) => ({
    title: text(r, 2),
    text: text(r, 30),
    time: `${1 + k}d`,
    likes_count: r() < 0.8 ? Math.floor(r() * 500) : null,
    comments_count: r() < 0.7 ? Math.floor(r() * 50) : null,
    external_link: r() < 0.3 ? `https://example.com/l/${i}/${k}` : null,
    images: r() < 0.4 ? [`https://media.example.com/u/${token(r, 24)}.jpg?t=${token(r, 43)}`] : null,
    videos: null,
    post_url: `https://example.com/posts/${i}-${k}-activity-${token(r, 12)}`,
    post_id: String(7_000_000_000 + i * 10 + k),
    date: new Date(Date.UTC(2024, Math.floor(r() * 12), 1 + Math.floor(r() * 28), 6, 43, 58, 330)),
  }));
  const locations = Array.from(
    { length: 1 + Math.floor(r() * 2) },
    () => `${Math.floor(r() * 999)} ${text(r, 2)} St, ${cc}`,
  );
  return {
    input: { url: `https://example.com/company/${id}` },
    id,
    name: text(r, 2),
    country_code: cc,
    locations,
    followers: Math.floor(r() * 2_000_000),
    employees_in_platform: Math.floor(r() * 30_000),
    about: text(r, 25 + Math.floor(r() * 40)),
    specialties: r() < 0.6 ? text(r, 8) : null,
    company_size: pick(r, SIZES),
    organization_type: r() < 0.5 ? 'Public Company' : 'Privately Held',
    industries: text(r, 3),
    website: `https://www.${id}.example.com/`,
    founded: r() < 0.8 ? 1900 + Math.floor(r() * 125) : null,
    company_id: String(100_000 + i),
    employees,
    headquarters: `${text(r, 1)}, ${cc}`,
    image: `https://media.example.com/cover/${token(r, 24)}/${i}.jpg?t=${token(r, 43)}`,
    logo: `https://media.example.com/logo/${token(r, 24)}/${i}.png?t=${token(r, 43)}`,
    similar,
    url: `https://example.com/company/${id}`,
    updates,
    slogan: r() < 0.5 ? text(r, 4) : null,
    affiliated: [],
    funding:
      r() < 0.3
        ? {
            last_round_date: new Date(Date.UTC(2015 + Math.floor(r() * 10), Math.floor(r() * 12), 10)),
            last_round_type: pick(r, ['Seed', 'Series A', 'Series B', 'Post IPO equity']),
            rounds: 1 + Math.floor(r() * 6),
          }
        : null,
    formatted_locations: locations,
    stock_info: null,
    get_directions_url: locations.map((l) => ({
      directions_url: `https://maps.example.com/?q=${encodeURIComponent(l)}`,
    })),
    description: text(r, 10 + Math.floor(r() * 20)),
    timestamp: new Date(Date.UTC(2025, 0, 1) + i * 1000),
  };
}

/** Writes records [from, to) as JSONL, gzip level 6 (what the service sends) when the path ends in `.gz`. */
export async function writeProfilesFile(path: string, from: number, to: number): Promise<void> {
  const out = createWriteStream(path);
  const gzip = path.endsWith('.gz') ? createGzip({ level: 6, chunkSize: 1 << 16 }) : undefined;
  if (gzip) gzip.pipe(out);
  const w = gzip ?? out;
  const step = 1000;
  for (let i = from; i < to; i += step) {
    let chunk = '';
    for (let k = i; k < Math.min(to, i + step); k++) chunk += JSON.stringify(companyProfile(k)) + '\n';
    if (!w.write(chunk)) await once(w, 'drain');
  }
  w.end();
  await once(out, 'close');
}
