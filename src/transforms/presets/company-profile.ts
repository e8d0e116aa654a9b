/**
 * `company_profile`: a company profile record, typed.
 *
 * - ISO timestamp strings (`timestamp`, `funding.last_round_date`, `updates[].date`) → Date.
 * - Counts (`followers`, `founded`, `employees_in_*`, `funding.rounds`, `updates[].likes_count` and
 *   `comments_count`) → integers, accepting "1,234", "1.2K", "500+".
 * - Objects and lists of objects get every element in the same full shape (known keys first, always present, null
 *   when missing; unknown keys kept after them), so a sink infers one stable STRUCT / LIST(STRUCT) type.
 * - Every declared column (`COMPANY_PROFILE_COLUMNS`: the spec's record plus what real records carry) is present,
 *   null when absent, in the declared order whatever the record's order; fields nobody declared (`crunchbase_url`,
 *   branded `employees_in_<brand>` counts, …) pass through after them and are inferred.
 *
 * A present value that cannot be converted becomes null and its original is kept in `_raw_values`, an object from
 * its path (`followers`, `funding.rounds`, `updates[3].likes_count`, `updates[1]`) to the value as it came. Nothing
 * is lost and the row is not dead-lettered.
 */
import type { Row } from '../../core/types.js';
import { parseIsoTimestamp } from '../../core/values.js';
import { column, struct, type DeclaredColumn, type DeclaredSchema } from '../../core/declared.js';
import { BIGINT, JSON_TYPE, TIMESTAMP, VARCHAR, listOf } from '../../core/logical-type.js';
import { FAILED, isPlainObject, parseCount, toText } from '../coerce.js';

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
  'specialties',
  'additional_information',
] as const;

const COUNT_FIELDS = ['followers', 'employees_in_platform', 'founded'] as const;
const TEXT_LIST_FIELDS = ['locations', 'formatted_locations', 'investors', 'country_codes_array'] as const;

/** Full element shapes of the lists of objects. */
const SHAPES = {
  employees: ['img', 'link', 'subtitle', 'title'],
  similar: ['Links', 'subtitle', 'title', 'location'],
  get_directions_url: ['directions_url'],
  affiliated: ['Links', 'subtitle', 'title', 'location'],
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

/** Full shapes of the objects. */
const OBJECT_SHAPES = {
  funding: ['last_round_date', 'last_round_type', 'rounds', 'last_round_raised'],
  stock_info: [
    'id',
    'datetime',
    'stock_exchange',
    'stock_ticker',
    'stock_price',
    'stock_price_change',
    'stock_provider',
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

const OBJECT_CONVERTERS: Record<keyof typeof OBJECT_SHAPES, Record<string, Converter>> = {
  funding: { last_round_date: asTimestamp, last_round_type: asText, rounds: asCount, last_round_raised: asText },
  stock_info: Object.fromEntries(OBJECT_SHAPES.stock_info.map((k) => [k, asText])),
};

/** Per element-field converters of the lists of objects; unlisted fields keep their value. */
const ELEMENT_CONVERTERS: Record<string, Record<string, Converter>> = {
  employees: { img: asText, link: asText, subtitle: asText, title: asText },
  similar: { Links: asText, subtitle: asText, title: asText, location: asText },
  affiliated: { Links: asText, subtitle: asText, title: asText, location: asText },
  get_directions_url: { directions_url: asText },
  updates: {
    title: asText,
    text: asText,
    time: asText,
    likes_count: asCount,
    comments_count: asCount,
    external_link: asText,
    images: asTextList,
    videos: asTextList,
    post_url: asText,
    post_id: asText,
    date: asTimestamp,
  },
};

const textColumn = (name: string, description: string): DeclaredColumn => column(name, VARCHAR, description);
const COMPANY = struct({ Links: VARCHAR, subtitle: VARCHAR, title: VARCHAR, location: VARCHAR });

/**
 * Every row has these keys (the spec's record and the fields real records carry); fields nobody declared pass
 * through after them and are inferred.
 */
export const COMPANY_PROFILE_COLUMNS: DeclaredSchema = [
  column('input', struct({ url: VARCHAR }), 'What the collection was asked for: the profile URL.', false),
  textColumn('id', "The service's id of the company (a slug)."),
  textColumn('company_id', "The platform's numeric company id, as text."),
  textColumn('name', 'Company name.'),
  textColumn('about', 'About text.'),
  textColumn('description', 'Short description.'),
  textColumn('slogan', 'Slogan.'),
  textColumn('headquarters', 'Headquarters location.'),
  textColumn('industries', 'Industries.'),
  textColumn('sphere', 'Sphere of business.'),
  textColumn('type', 'Company type.'),
  textColumn('organization_type', 'Organization type, e.g. "Privately Held".'),
  textColumn('company_size', 'Size band, e.g. "201-500 employees".'),
  textColumn('country_code', 'Country code of the headquarters.'),
  textColumn('url', 'Profile URL.'),
  textColumn('website', 'Company website.'),
  textColumn(
    'registry_url',
    'URL of the company in a business registry (the field name carries a brand in real data).',
  ),
  textColumn('image', 'Cover image URL.'),
  textColumn('logo', 'Logo URL.'),
  textColumn('specialties', 'Specialties, as one text.'),
  textColumn('additional_information', 'Additional information.'),
  column('followers', BIGINT, 'Followers on the platform.'),
  column('employees_in_platform', BIGINT, 'Employees listed on the platform (named after the platform in real data).'),
  column('founded', BIGINT, 'Year founded.'),
  column('locations', listOf(VARCHAR), 'Office addresses.'),
  column('formatted_locations', listOf(VARCHAR), 'Office addresses, formatted.'),
  column('investors', listOf(VARCHAR), 'Investors.'),
  column('country_codes_array', listOf(VARCHAR), 'Country codes of the offices.'),
  column('timestamp', TIMESTAMP, 'When the service collected the record.'),
  column(
    'funding',
    struct({ last_round_date: TIMESTAMP, last_round_type: VARCHAR, rounds: BIGINT, last_round_raised: VARCHAR }),
    'Funding: date and type of the last round, number of rounds, amount raised as shown.',
  ),
  column(
    'stock_info',
    struct(Object.fromEntries(OBJECT_SHAPES.stock_info.map((k) => [k, VARCHAR]))),
    'Stock listing: exchange, ticker, price as shown.',
  ),
  column('employees', listOf(struct({ img: VARCHAR, link: VARCHAR, subtitle: VARCHAR, title: VARCHAR })), 'Employees.'),
  column('similar', listOf(COMPANY), 'Similar companies.'),
  column('get_directions_url', listOf(struct({ directions_url: VARCHAR })), 'Map links of the offices.'),
  column('affiliated', listOf(COMPANY), 'Affiliated companies.'),
  column(
    'updates',
    listOf(
      struct({
        title: VARCHAR,
        text: VARCHAR,
        time: VARCHAR,
        likes_count: BIGINT,
        comments_count: BIGINT,
        external_link: VARCHAR,
        images: listOf(VARCHAR),
        videos: listOf(VARCHAR),
        post_url: VARCHAR,
        post_id: VARCHAR,
        date: TIMESTAMP,
      }),
    ),
    'Posts of the company.',
  ),
  column('_raw_values', JSON_TYPE, 'Values that did not convert, by path, as they came; null when all did.'),
];

export function normalizeCompanyProfile(row: Row): Row[] {
  // Every declared column first, in the declared order, then the record's other fields: the row is built with its
  // final layout in one copy. Copying the record and then adding the columns it lacked cost a layout change per
  // added key, which was a third of this function.
  const out: Row = { ...ROW_TEMPLATE, ...row };
  const raw = new RawKeeper();
  // A value already of its type is in `out` as it is (the spread copied it): only the others are written.
  for (const f of TEXT_FIELDS) {
    const v = row[f];
    if (typeof v !== 'string') convertField(out, raw, f, v, asText);
  }
  for (const f of COUNT_FIELDS) {
    const v = row[f];
    if (!isCount(v)) convertField(out, raw, f, v, asCount);
  }
  // The spec's neutral `employees_in_platform` carries a brand in real payloads (`employees_in_<brand>`).
  for (const f in row)
    if (f.startsWith('employees_in_') && f !== 'employees_in_platform') convertField(out, raw, f, row[f], asCount);
  for (const f of TEXT_LIST_FIELDS) {
    const v = row[f];
    if (!Array.isArray(v) || asTextList(v) !== v) convertField(out, raw, f, v, asTextList);
  }
  convertField(out, raw, 'timestamp', row.timestamp, asTimestamp);

  const input = row.input;
  out.input = plain(input) ? { ...input, url: text(input.url) } : { url: null };
  for (const field in OBJECT_SHAPES) {
    const f = field as keyof typeof OBJECT_SHAPES;
    out[f] = structObject(f, OBJECT_TEMPLATES[f], OBJECT_CONVERTERS[f], row[f], raw);
  }
  for (const field in SHAPES) {
    const f = field as keyof typeof SHAPES;
    out[f] = structList(f, ELEMENT_TEMPLATES[f], ELEMENT_CONVERTERS[f] ?? {}, row[f], raw);
  }
  out._raw_values = raw.values ?? null;
  return [out];
}

function isCount(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Each shape as an object of nulls, its keys in the shape's order: an element starts as a copy of it, which V8
 * makes in one step with the final layout, where setting the keys one by one cost a lookup and a layout change
 * each. (Not frozen: V8 copies a frozen object the slow way.)
 */
function template(shape: readonly string[]): Readonly<Row> {
  return Object.fromEntries(shape.map((k) => [k, null]));
}

/** A row of nulls in the declared columns' order (see `template`). */
const ROW_TEMPLATE = template(COMPANY_PROFILE_COLUMNS.map((c) => c.name));

const OBJECT_TEMPLATES = {
  funding: template(OBJECT_SHAPES.funding),
  stock_info: template(OBJECT_SHAPES.stock_info),
};

const ELEMENT_TEMPLATES = {
  employees: template(SHAPES.employees),
  similar: template(SHAPES.similar),
  get_directions_url: template(SHAPES.get_directions_url),
  affiliated: template(SHAPES.affiliated),
  updates: template(SHAPES.updates),
};

/** Sets `target[key]` to the converted value, or to null with the original kept by `raw` under `path`. */
function convertField(target: Row, raw: RawKeeper, path: string, value: unknown, conv: Converter, key = path): void {
  const c = conv(value);
  if (c === FAIL) {
    raw.keep(path, value);
    target[key] = null;
  } else target[key] = c;
}

/** An object in its full shape (converted known keys first, unknown keys kept after them); null when absent. */
function structObject(
  field: string,
  shape: Readonly<Row>,
  converters: Record<string, Converter>,
  v: unknown,
  raw: RawKeeper,
): Row | null {
  if (!plain(v)) {
    if (v !== null && v !== undefined) raw.keep(field, v);
    return null;
  }
  const out: Row = { ...shape };
  for (const key in v) {
    const conv = converters[key];
    if (conv) convertField(out, raw, `${field}.${key}`, v[key], conv, key);
    else out[key] = v[key];
  }
  return out;
}

function structList(
  field: string,
  shape: Readonly<Row>,
  converters: Record<string, Converter>,
  v: unknown,
  raw: RawKeeper,
): Row[] | null {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v)) {
    raw.keep(field, v);
    return null;
  }
  const out: Row[] = [];
  for (let index = 0; index < v.length; index++) {
    const e: unknown = v[index];
    if (!plain(e)) {
      raw.keep(`${field}[${index}]`, e);
      continue;
    }
    const el: Row = { ...shape };
    for (const key in e) {
      const value = e[key];
      const conv = converters[key];
      const c = conv ? conv(value) : value;
      if (c === FAIL) raw.keep(`${field}[${index}].${key}`, value);
      el[key] = c === FAIL ? null : (c ?? null);
    }
    out.push(el);
  }
  return out;
}

/** Collects the originals of values that did not convert, by path, for `_raw_values`. */
class RawKeeper {
  values: Record<string, unknown> | undefined;

  keep(path: string, value: unknown): void {
    (this.values ??= {})[path] = value;
  }
}
