/**
 * Deterministic deep-lookup results for (seed, query). The emulated world holds `available` entities (companies)
 * that satisfy a query; a request matches `min(result_limit, available)` of them, always the first ones, so a
 * preview's sample rows are the first rows of the full request and any row can be generated alone.
 *
 * Rows are flat objects keyed by column name. Known columns (company_name, website, founding_date, employee_count,
 * headquarters, industry) come from one entity per row index, so they agree with each other; other columns (from a
 * trigger `spec` or an enrichment) are generated per cell from the column's name, so adding a column never changes
 * the values of the others. Simple constraints in the query ("founded after 2020", "more than 50 employees") hold in
 * every row.
 *
 * Test hooks in the query text: `#fail` makes the full request fail while generating; `#fail-preview` makes the
 * preview fail.
 */
import { serpRng, type SerpRng } from './serp-rng.js';

export type ColumnType = 'enrichment' | 'constraint';

export interface LookupColumn {
  name: string;
  description: string;
  type: ColumnType;
}

export interface QueryConstraints {
  foundedAfter?: number;
  foundedBefore?: number;
  minEmployees?: number;
  maxEmployees?: number;
  industry?: string;
}

export interface QueryPlan {
  /** Entities that satisfy the query; a request matches the first `min(result_limit, available)`. */
  available: number;
  /** Of every 100 entities looked at, how many fail a constraint (`skipped_records`). */
  skipRatePct: number;
  title: string;
  constraints: QueryConstraints;
  failsRequest: boolean;
  failsPreview: boolean;
}

export type LookupRow = Record<string, string | number | boolean | null>;

/** Rows in a preview's `sample_data`. */
export const PREVIEW_ROWS = 10;

export function queryPlan(seed: number, query: string): QueryPlan {
  const r = serpRng(seed, 'deep-lookup-plan', normalizeQuery(query));
  const roll = r.next();
  // Some queries find nothing, most find tens to hundreds, a few thousands.
  const available = roll < 0.03 ? 0 : roll < 0.9 ? r.int(8, 400) : r.int(401, 5_000);
  return {
    available,
    skipRatePct: r.int(5, 60),
    title: titleOf(query),
    constraints: constraintsOf(query),
    failsRequest: /#fail(?!-)/i.test(query),
    failsPreview: /#fail-preview/i.test(query),
  };
}

/** The columns a request gets when the trigger names no spec: the query's constrained fields are `constraint`. */
export function defaultColumns(query: string): LookupColumn[] {
  const c = constraintsOf(query);
  const kind = (constrained: boolean): ColumnType => (constrained ? 'constraint' : 'enrichment');
  return [
    { name: 'company_name', description: 'Name of the company', type: 'enrichment' },
    { name: 'website', description: 'Main website domain', type: 'enrichment' },
    {
      name: 'founding_date',
      description: 'Date the company was founded',
      type: kind(c.foundedAfter !== undefined || c.foundedBefore !== undefined),
    },
    {
      name: 'employee_count',
      description: 'Number of employees',
      type: kind(c.minEmployees !== undefined || c.maxEmployees !== undefined),
    },
    { name: 'headquarters', description: 'City and country of the headquarters', type: 'enrichment' },
    { name: 'industry', description: 'Main industry', type: kind(c.industry !== undefined) },
  ];
}

export function lookupRow(seed: number, query: string, index: number, columns: readonly LookupColumn[]): LookupRow {
  const e = entity(seed, query, index);
  const out: LookupRow = {};
  for (const col of columns) out[col.name] = cellOf(seed, query, index, e, col);
  return out;
}

/** The value of one column in row `index` (enrichment columns use this alone). */
export function lookupCell(seed: number, query: string, index: number, column: LookupColumn): LookupRow[string] {
  return cellOf(seed, query, index, entity(seed, query, index), column);
}

interface Entity {
  /** The known columns' values. */
  fields: Record<string, string | number | null>;
  domain: string;
}

const NAME_A = [
  'Nova',
  'Blue',
  'Apex',
  'Cedar',
  'Lumen',
  'Quartz',
  'Orbit',
  'Harbor',
  'Summit',
  'Vector',
  'Ember',
  'Granite',
  'Atlas',
  'Pioneer',
  'Silver',
  'North',
  'Crimson',
  'Falcon',
  'Meridian',
  'Willow',
  'Signal',
  'Prism',
  'Beacon',
  'Tidal',
  'Aurora',
  'Cobalt',
  'Helix',
  'Juniper',
  'Kestrel',
  'Lattice',
];
const NAME_B = [
  'Labs',
  'Systems',
  'Robotics',
  'Analytics',
  'Health',
  'Networks',
  'Dynamics',
  'Works',
  'Bio',
  'Energy',
  'Logic',
  'Cloud',
  'Data',
  'Foundry',
  'Machines',
  'Software',
  'Capital',
  'Devices',
  'Intelligence',
  'Materials',
];
/** Coprime with NAME_A.length × NAME_B.length (600), so it permutes the grid. */
const NAME_STRIDE = 367;
const TLDS = ['com', 'io', 'ai', 'co', 'net'];
const CITIES = [
  'San Francisco, US',
  'New York, US',
  'Austin, US',
  'London, GB',
  'Berlin, DE',
  'Paris, FR',
  'Toronto, CA',
  'Tel Aviv, IL',
  'Singapore, SG',
  'Amsterdam, NL',
  'Stockholm, SE',
  'Bangalore, IN',
];
const INDUSTRIES: Record<string, string> = {
  ai: 'Artificial Intelligence',
  'artificial intelligence': 'Artificial Intelligence',
  fintech: 'Financial Services',
  biotech: 'Biotechnology',
  robotics: 'Robotics',
  saas: 'Software',
  climate: 'Climate Technology',
  cybersecurity: 'Cybersecurity',
  healthcare: 'Healthcare',
};
const OTHER_INDUSTRIES = ['Software', 'Healthcare', 'Logistics', 'Retail', 'Manufacturing', 'Media', 'Education'];
const FIRST = ['Ana', 'Ben', 'Chloe', 'David', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kofi', 'Lena'];
const LAST = ['Ruiz', 'Okafor', 'Smith', 'Tanaka', 'Novak', 'Haddad', 'Larsen', 'Costa', 'Meyer', 'Singh', 'Park'];
const PHRASES = [
  'Developer platform',
  'Enterprise analytics',
  'Consumer app',
  'Industrial automation',
  'Payments infrastructure',
  'Clinical software',
  'Supply-chain tooling',
  'Open-source database',
];

function entity(seed: number, query: string, index: number): Entity {
  const q = normalizeQuery(query);
  const r = serpRng(seed, 'deep-lookup-entity', q, index);
  const c = constraintsOf(query);
  // Names are distinct by construction: index → a permutation of the A × B grid (a multiplier coprime with its
  // size, offset per query), then numbered rounds of it.
  const grid = NAME_A.length * NAME_B.length;
  const offset = serpRng(seed, 'deep-lookup-names', q).int(0, grid - 1);
  const slot = ((index % grid) * NAME_STRIDE + offset) % grid;
  const round = Math.floor(index / grid);
  const base = `${NAME_A[slot % NAME_A.length]} ${NAME_B[Math.floor(slot / NAME_A.length)]}`;
  const name = round === 0 ? base : `${base} ${round + 1}`;
  const domain = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '')}.${r.pick(TLDS)}`;
  const fromYear = Math.max(1950, (c.foundedAfter ?? 1979) + 1);
  const toYear = Math.min(2025, (c.foundedBefore ?? 2026) - 1);
  const year = r.int(fromYear, Math.max(fromYear, toYear));
  const month = r.int(1, 12);
  const day = r.int(1, 28);
  const minEmp = Math.max(1, (c.minEmployees ?? 0) + 1);
  const maxEmp = Math.max(minEmp, (c.maxEmployees ?? 20_001) - 1);
  // Log-uniform: most companies are small.
  const employees = Math.round(Math.exp(Math.log(minEmp) + r.next() * (Math.log(maxEmp) - Math.log(minEmp))));
  return {
    fields: {
      company_name: name,
      website: domain,
      founding_date: `${year}-${pad(month)}-${pad(day)}`,
      employee_count: Math.min(maxEmp, Math.max(minEmp, employees)),
      headquarters: r.bool(0.05) ? null : r.pick(CITIES),
      industry: c.industry ?? r.pick(OTHER_INDUSTRIES),
    },
    domain,
  };
}

function cellOf(seed: number, query: string, index: number, e: Entity, col: LookupColumn): LookupRow[string] {
  if (Object.hasOwn(e.fields, col.name)) return e.fields[col.name] as LookupRow[string];
  const r = serpRng(seed, 'deep-lookup-cell', normalizeQuery(query), index, col.name);
  // Entities that reached the results satisfy every constraint.
  if (col.type === 'constraint') return true;
  if (r.bool(0.03)) return null;
  return generated(r, col.name.toLowerCase(), e);
}

function generated(r: SerpRng, name: string, e: Entity): string | number {
  const person = `${r.pick(FIRST)} ${r.pick(LAST)}`;
  if (name.includes('email')) return `${person.split(' ')[0]!.toLowerCase()}@${e.domain}`;
  if (name.includes('phone')) return `+1 555 ${String(r.int(0, 9999)).padStart(4, '0')}`;
  if (name.includes('url') || name.includes('link') || name.includes('profile'))
    return `https://${e.domain}/${r.pick(['about', 'team', 'careers', 'press'])}`;
  if (name.includes('revenue') || name.includes('funding') || name.includes('valuation'))
    return `$${(r.int(5, 5_000) / 10).toFixed(1)}M`;
  if (name.includes('year')) return r.int(1990, 2025);
  if (name.includes('date')) return `${r.int(2015, 2025)}-${pad(r.int(1, 12))}-${pad(r.int(1, 28))}`;
  if (name.includes('count') || name.includes('number') || name.startsWith('num_')) return r.int(0, 5_000);
  if (name.includes('name') || /\b(ceo|cto|cfo|founder)/.test(name.replace(/_/g, ' '))) return person;
  return r.pick(PHRASES);
}

/** "Find all AI startups founded after 2020" → "AI startups founded after 2020". */
function titleOf(query: string): string {
  const rest = query
    .trim()
    .replace(/^find all\s*/i, '')
    .replace(/#fail(-preview)?/gi, '')
    .trim();
  return rest ? rest.charAt(0).toUpperCase() + rest.slice(1) : 'Lookup';
}

function constraintsOf(query: string): QueryConstraints {
  const q = query.toLowerCase();
  const c: QueryConstraints = {};
  const after = /(?:founded|established|started)?\s*(?:after|since)\s+(\d{4})/.exec(q);
  if (after) c.foundedAfter = Number(after[1]) - (/since/.test(after[0]) ? 1 : 0);
  const before = /(?:founded|established|started)?\s*before\s+(\d{4})/.exec(q);
  if (before) c.foundedBefore = Number(before[1]);
  const min = /(?:more than|over|at least)\s+([\d,]+)\s+(?:employees|people|staff)/.exec(q);
  if (min) c.minEmployees = Number(min[1]!.replace(/,/g, '')) - (/at least/.test(min[0]) ? 1 : 0);
  const max = /(?:fewer than|less than|under)\s+([\d,]+)\s+(?:employees|people|staff)/.exec(q);
  if (max) c.maxEmployees = Number(max[1]!.replace(/,/g, ''));
  for (const [word, industry] of Object.entries(INDUSTRIES)) {
    if (new RegExp(`\\b${word}\\b`).test(q)) {
      c.industry = industry;
      break;
    }
  }
  return c;
}

/** Case and spacing do not make a different query. */
function normalizeQuery(query: string): string {
  return query.trim().replace(/\s+/g, ' ').toLowerCase();
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}
