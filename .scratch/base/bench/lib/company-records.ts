/**
 * Synthetic company-profile records shaped like the spec's "Company profile record" (nested arrays of objects,
 * nulls, long `about` text, ~2.9 KB per record serialised), and writers for the download formats the service
 * offers (JSONL, JSON array, CSV with nested values as JSON text and null as an empty cell).
 *
 * Deliberately simple and self-contained: benches and decoder tests need realistic bytes, not the emulator's
 * dataset model. Text mixes in multi-byte UTF-8 (2-, 3- and 4-byte sequences), quotes, backslashes and newlines
 * so that every escape path of a decoder is exercised by ordinary records.
 */

/** mulberry32: tiny, seeded, good enough for test data. */
export function rng(seed: number): () => number {
  let state = seed >>> 0 || 0x9e3779b9;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'data platform global leading company customers products services solutions innovation team growth markets ' +
  'engineering quality trusted brands partners network industry consumer food energy health finance software ' +
  'cloud retail logistics research design people communities sustainable responsible delicious future value'
).split(' ');
/** Words with multi-byte UTF-8 (2, 3 and 4 bytes), quotes and a backslash, sprinkled into text. */
const SPICE = ['café', 'naïve', 'Zürich', '—', '’s', '€25', '東京', '🚀', '"quoted"', 'C:\\dir', 'a\tb'];

function pick<T>(r: () => number, items: readonly T[]): T {
  return items[Math.floor(r() * items.length)]!;
}

function int(r: () => number, min: number, max: number): number {
  return min + Math.floor(r() * (max - min + 1));
}

function words(r: () => number, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(r() < 0.04 ? pick(r, SPICE) : pick(r, WORDS));
  return out.join(' ');
}

const TOKEN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Random URL tokens, as real media links carry: they keep the data from compressing unrealistically well. */
function token(r: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += TOKEN_CHARS[Math.floor(r() * 64)];
  return s;
}

function slug(r: () => number): string {
  return `${pick(r, WORDS)}-${pick(r, WORDS)}-${int(r, 1, 99999)}`;
}

/** One record; `i` makes ids unique, `seed` makes the whole set reproducible. */
export function companyRecord(i: number, seed = 1): Record<string, unknown> {
  const r = rng(seed * 1_000_003 + i);
  const id = `${slug(r)}-${i}`;
  const url = `https://www.example-network.com/company/${id}`;
  const employees = Array.from({ length: int(r, 1, 3) }, () => ({
    img: `https://media.example-cdn.com/img/${token(r, 22)}/shrink_100_100/0/${int(r, 1e9, 2e9)}?e=2147483647&v=beta&t=${token(r, 43)}`,
    link: `https://www.example-network.com/in/${slug(r)}`,
    subtitle: words(r, 3),
    title: words(r, 2),
  }));
  const similar = Array.from({ length: int(r, 1, 3) }, () => ({
    Links: `https://www.example-network.com/company/${slug(r)}`,
    subtitle: words(r, 3),
    title: words(r, 2),
    ...(r() < 0.6 && { location: `${words(r, 1)}, ${pick(r, ['US', 'DE', 'FR', 'JP'])}` }),
  }));
  const updates = Array.from({ length: int(r, 1, 2) }, () => ({
    title: words(r, 3),
    // Newlines inside a value: JSONL must escape them, CSV must quote them.
    text: `${words(r, int(r, 4, 16))}\n${words(r, 5)}`,
    time: `${int(r, 1, 11)} months ago`,
    ...(r() < 0.7 && { likes_count: int(r, 0, 5000), comments_count: int(r, 0, 300) }),
    ...(r() < 0.3 && { external_link: `https://example.org/${slug(r)}` }),
    ...(r() < 0.2 && { images: [`https://media.example-cdn.com/u/${slug(r)}.jpg`] }),
    ...(r() < 0.1 && { videos: [] }),
  }));
  const locations = Array.from({ length: int(r, 1, 2) }, () => `${int(r, 1, 999)} ${words(r, 3)} St, ${words(r, 1)}`);
  return {
    input: { url },
    id,
    name: words(r, 2),
    country_code: pick(r, ['US', 'DE', 'FR', 'JP', 'GB', null]),
    locations,
    followers: int(r, 0, 3_000_000),
    employees_in_platform: int(r, 1, 100_000),
    about: words(r, int(r, 15, 45)),
    specialties: r() < 0.5 ? null : words(r, 8),
    company_size: pick(r, ['1-10 employees', '51-200 employees', '10,001+ employees']),
    organization_type: pick(r, ['Public Company', 'Privately Held', 'Nonprofit']),
    industries: words(r, 3),
    website: r() < 0.9 ? `https://www.${pick(r, WORDS)}${i}.example` : null,
    registry_url: `https://www.example-registry.com/organization/${id}`,
    founded: r() < 0.85 ? int(r, 1850, 2024) : null,
    company_id: String(int(r, 1000, 99_999_999)),
    employees,
    headquarters: `${words(r, 1)}, ${pick(r, ['IL', 'CA', 'NY'])}`,
    image: `https://media.example-cdn.com/cover/${token(r, 22)}?e=2147483647&v=beta&t=${token(r, 43)}`,
    logo: `https://media.example-cdn.com/logo/${token(r, 22)}?e=2147483647&v=beta&t=${token(r, 43)}`,
    similar,
    url,
    updates,
    slogan: r() < 0.5 ? words(r, 5) : null,
    affiliated: [],
    investors: r() < 0.3 ? [words(r, 2), words(r, 2)] : [],
    funding:
      r() < 0.4
        ? {
            last_round_date: new Date(1.5e12 + i * 7.9e6).toISOString(),
            last_round_type: 'Series B',
            rounds: int(r, 1, 9),
          }
        : null,
    formatted_locations: locations.map((l) => l.toUpperCase()),
    stock_info: null,
    get_directions_url: locations.map((l) => ({
      directions_url: `https://maps.example.com/?q=${encodeURIComponent(l)}`,
    })),
    description: words(r, 6),
    sphere: words(r, 2),
    type: pick(r, ['Public Company', 'Privately Held']),
  };
}

/** The header every CSV writer below uses: the record keys in first-seen order. */
export function csvHeader(sample: Record<string, unknown>): string[] {
  return Object.keys(sample);
}

/**
 * One CSV row as the service writes it: nested values (objects, arrays) as JSON text, null/undefined as an empty
 * cell, RFC 4180 quoting where a cell holds a comma, quote, CR or LF (and for empty strings, so they stay distinct
 * from null).
 */
export function csvRow(rec: Record<string, unknown>, header: readonly string[]): string {
  let line = '';
  for (let k = 0; k < header.length; k++) {
    if (k > 0) line += ',';
    line += csvCell(rec[header[k]!]);
  }
  return line;
}

export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (text === '' || /[",\r\n]/.test(text)) return `"${text.replaceAll('"', '""')}"`;
  return text;
}

/** Whole documents, for small test inputs. */
export function toJsonl(records: readonly Record<string, unknown>[]): string {
  return records.map((r) => JSON.stringify(r) + '\n').join('');
}

export function toCsv(records: readonly Record<string, unknown>[], header = csvHeader(records[0] ?? {})): string {
  return [header.join(','), ...records.map((r) => csvRow(r, header))].join('\r\n') + '\r\n';
}
