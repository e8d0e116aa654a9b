/**
 * `company_profile`: a company profile record, typed.
 *
 * - ISO timestamp strings (`timestamp`, `funding.last_round_date`, `updates[].date`) → Date.
 * - Counts (`followers`, `founded`, `employees_in_*`, `funding.rounds`, `updates[].likes_count` and
 *   `comments_count`) → integers, accepting "1,234", "1.2K", "500+".
 * - Lists of objects get every element in the same full shape (known keys first, always present, null when
 *   missing; unknown keys kept after them), so a sink infers one stable LIST(STRUCT) type.
 * - Every field of the spec's record is present (null when absent); fields the spec does not list pass through.
 *
 * A present value that cannot be converted becomes null and its original is kept as text in a `_raw_<path>`
 * column (e.g. `_raw_followers`, `_raw_funding__rounds`); for list elements `_raw_updates__likes_count` holds a
 * JSON object from element index to original value. Nothing is lost and the row is not dead-lettered.
 */
import type { Row } from '../../core/types.js';
import { parseIsoTimestamp } from '../../core/values.js';
import { FAILED, describeValue, isPlainObject, parseCount, toText } from '../coerce.js';

const TEXT_FIELDS = [
  'id',
  'company_id',
  'name',
  'about',
  'description',
  'slogan',
  'headquarters',
  'industries',
  'sphere',
  'type',
  'organization_type',
  'company_size',
  'country_code',
  'url',
  'website',
  'registry_url',
  'image',
  'logo',
] as const;

const COUNT_FIELDS = ['followers', 'employees_in_platform', 'founded'] as const;
const TEXT_LIST_FIELDS = ['locations', 'formatted_locations', 'investors'] as const;
/** Kept as the service sends them; only made present. */
const OPAQUE_FIELDS = ['specialties', 'stock_info'] as const;

/** Full element shapes of the lists of objects. */
const SHAPES = {
  employees: ['img', 'link', 'subtitle', 'title'],
  similar: ['Links', 'subtitle', 'title', 'location'],
  get_directions_url: ['directions_url'],
  updates: [
    'title',
    'text',
    'time',
    'likes_count',
    'comments_count',
    'external_link',
    'images',
    'videos',
    'post_url',
    'post_id',
    'date',
  ],
} as const;

type Converter = (v: unknown) => unknown;

// This runs per record on bulk loads. Under tsx every use of an imported binding is a getter call (~10× a local
// read), so the per-record path reads local aliases and takes fast paths for the common, already-typed values.
const FAIL = FAILED;
const parseTs = parseIsoTimestamp;
const count = parseCount;
const text = toText;
const plain = isPlainObject;

const asText: Converter = (v) => (typeof v === 'string' ? v : v === null || v === undefined ? null : (text(v) ?? FAIL));
const asCount: Converter = (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : count(v));
const asTimestamp: Converter = (v) => (v === null || v === undefined || v === '' ? null : (parseTs(v) ?? FAIL));
const asTextList: Converter = (v) => {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v)) return typeof v === 'string' ? [v] : FAIL;
  for (const e of v) if (typeof e !== 'string') return FAIL;
  return v;
};

/** Per element-field converters of the lists of objects; unlisted fields keep their value. */
const ELEMENT_CONVERTERS: Record<string, Record<string, Converter>> = {
  employees: { img: asText, link: asText, subtitle: asText, title: asText },
  similar: { Links: asText, subtitle: asText, title: asText, location: asText },
  get_directions_url: { directions_url: asText },
  updates: {
    title: asText,
    text: asText,
    time: asText,
    likes_count: asCount,
    comments_count: asCount,
    external_link: asText,
    images: asTextList,
    post_url: asText,
    post_id: asText,
    date: asTimestamp,
  },
};

export function normalizeCompanyProfile(row: Row): Row[] {
  const out: Row = { ...row };
  const raw = new RawKeeper(out);
  for (const f of TEXT_FIELDS) convertField(out, raw, f, row[f], asText);
  for (const f of COUNT_FIELDS) convertField(out, raw, f, row[f], asCount);
  // The spec's neutral `employees_in_platform` carries a brand in real payloads (`employees_in_<brand>`).
  for (const f in row)
    if (f.startsWith('employees_in_') && f !== 'employees_in_platform') convertField(out, raw, f, row[f], asCount);
  for (const f of TEXT_LIST_FIELDS) convertField(out, raw, f, row[f], asTextList);
  for (const f of OPAQUE_FIELDS) out[f] = row[f] ?? null;
  if ('timestamp' in row) convertField(out, raw, 'timestamp', row.timestamp, asTimestamp);

  const input = row.input;
  out.input = plain(input) ? { ...input, url: text(input.url) } : { url: null };
  out.funding = funding(row.funding, raw);
  for (const field in SHAPES) {
    const f = field as keyof typeof SHAPES;
    out[f] = structList(f, SHAPES[f], ELEMENT_CONVERTERS[f] ?? {}, row[f], raw);
  }
  // The spec types `affiliated` only as "array"; in practice it lists companies shaped like `similar`.
  const affiliated = row.affiliated;
  out.affiliated =
    Array.isArray(affiliated) && affiliated.every(plain)
      ? structList('affiliated', SHAPES.similar, ELEMENT_CONVERTERS.similar ?? {}, affiliated, raw)
      : (affiliated ?? null);
  raw.flush();
  return [out];
}

/** Sets `target[key]` to the converted value, or to null with the original kept by `raw` under `path`. */
function convertField(target: Row, raw: RawKeeper, path: string, value: unknown, conv: Converter, key = path): void {
  const c = conv(value);
  if (c === FAIL) {
    raw.scalar(path, value);
    target[key] = null;
  } else target[key] = c;
}

function funding(v: unknown, raw: RawKeeper): Row | null {
  if (!plain(v)) {
    if (v !== null && v !== undefined) raw.scalar('funding', v);
    return null;
  }
  const out: Row = { last_round_date: null, last_round_type: null, rounds: null, ...v };
  convertField(out, raw, 'funding__last_round_date', v.last_round_date, asTimestamp, 'last_round_date');
  convertField(out, raw, 'funding__last_round_type', v.last_round_type, asText, 'last_round_type');
  convertField(out, raw, 'funding__rounds', v.rounds, asCount, 'rounds');
  return out;
}

function structList(
  field: string,
  shape: readonly string[],
  converters: Record<string, Converter>,
  v: unknown,
  raw: RawKeeper,
): Row[] | null {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v)) {
    raw.scalar(field, v);
    return null;
  }
  const out: Row[] = [];
  for (let index = 0; index < v.length; index++) {
    const e: unknown = v[index];
    if (!plain(e)) {
      raw.element(field, '', index, e);
      continue;
    }
    const el: Row = {};
    for (const key of shape) el[key] = null;
    for (const key in e) {
      const value = e[key];
      const conv = converters[key];
      const c = conv ? conv(value) : value;
      if (c === FAIL) raw.element(field, key, index, value);
      el[key] = c === FAIL ? null : (c ?? null);
    }
    out.push(el);
  }
  return out;
}

/** Collects originals of values that did not convert into `_raw_<path>` text columns. */
class RawKeeper {
  private elements: Map<string, Record<string, unknown>> | undefined;
  constructor(private readonly row: Row) {}

  scalar(path: string, value: unknown): void {
    this.row[`_raw_${path}`] = describeValue(value);
  }

  element(field: string, key: string, index: number, value: unknown): void {
    const col = key === '' ? `_raw_${field}` : `_raw_${field}__${key}`;
    this.elements ??= new Map();
    let m = this.elements.get(col);
    if (!m) this.elements.set(col, (m = {}));
    m[String(index)] = value;
  }

  flush(): void {
    if (this.elements) for (const [col, m] of this.elements) this.row[col] = JSON.stringify(m);
  }
}
