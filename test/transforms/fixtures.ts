/**
 * Generated payloads in the service's shapes (SERP pages, review pages, company profiles) and a harness that runs a
 * transform over batches. Every text here is made up.
 */
import type { Batch, DeadLetter, Row, Transform, TransformContext } from '../../src/core/types.js';
import type { ComponentDef, ComponentDeps } from '../../src/contracts/component.js';

export interface RunResult {
  rows: Row[];
  batches: Batch[];
  deadLetters: DeadLetter[];
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export function transformContext(over: Partial<TransformContext> = {}, dead: DeadLetter[] = []): TransformContext {
  return {
    log: silent,
    deadLetter: (d) => dead.push(d),
    unitId: 'unit:test',
    unitParams: {},
    ...over,
  };
}

/** Transforms need no service: building one with these deps proves it. */
export const noDeps: ComponentDeps = {
  log: silent,
  baseDir: '/nonexistent',
  client: () => Promise.reject(new Error('transforms must not use the service client')),
};

/** Validates `config` through the component's own schema (defaults applied) and builds the transform. */
export function build<C>(def: ComponentDef<'transform', C, Transform>, config: unknown): Transform {
  return def.create(def.schema.parse(config), noDeps);
}

async function* fromBatches(batches: Batch[]): AsyncIterable<Batch> {
  for (const b of batches) yield b;
}

export async function run(
  t: Transform,
  input: Row[] | Batch[],
  ctx: Partial<TransformContext> = {},
): Promise<RunResult> {
  const batches: Batch[] = input.length > 0 && Array.isArray(input[0]) ? (input as Batch[]) : [input as Row[]];
  const deadLetters: DeadLetter[] = [];
  const out: Batch[] = [];
  for await (const b of t(fromBatches(batches), transformContext(ctx, deadLetters))) out.push(b);
  return { rows: out.flat(), batches: out, deadLetters };
}

// ---------------------------------------------------------------- SERP pages

export interface OrganicSpec {
  link: string;
  /** Fields left out of the item. */
  omit?: string[];
  extra?: Row;
}

export interface SerpPageSpec {
  query?: string;
  /** 1-based page number written into `pagination.current_page`. */
  page?: number;
  pageSize?: number;
  organic?: OrganicSpec[];
  oragnic?: OrganicSpec[];
  images?: Row[];
  /** Entries of `related`; anything goes, to test junk entries. */
  related?: unknown[];
  hasNext?: boolean;
  /** Top-level blocks left out of the page (e.g. `general`, `pagination`). */
  omit?: string[];
  timestamp?: string;
}

export function organicItem(spec: OrganicSpec, rank: number, globalRank: number): Row {
  const host = new URL(spec.link).host;
  const item: Row = {
    link: spec.link,
    source: `Source ${host}`,
    display_link: `${host} › page`,
    title: `Title for ${spec.link}`,
    description: `Generated description of ${host}.`,
    icon: 'data:image/png;base64,AAAA',
    image: 'data:image/jpeg;base64,BBBB',
    image_base64: 'data:image/jpeg;base64,CCCC',
    duration: '3:07',
    duration_sec: 187,
    snippet_highlighted_words: ['generated', 'words'],
    extensions: [
      { inline: true, type: 'text', text: 'Inline note', rank: 1 },
      { type: 'site_link', text: 'Sub page', link: `${spec.link}sub`, extended: true, rank: 2 },
    ],
    rank,
    global_rank: globalRank,
    ...spec.extra,
  };
  for (const k of spec.omit ?? []) delete item[k];
  return item;
}

export function serpPage(spec: SerpPageSpec = {}): Row {
  const query = spec.query ?? 'widget shops';
  const page = spec.page ?? 1;
  const size = spec.pageSize ?? 10;
  const start = (page - 1) * size;
  const url = `https://www.example-search.test/search?q=${encodeURIComponent(query)}`;
  let g = 1;
  const organic = (spec.organic ?? []).map((o, i) => organicItem(o, i + 1, g++));
  const oragnic = (spec.oragnic ?? []).map((o, i) => organicItem(o, i + 1, g++));
  const pages = [1, 2, 3, 4, 5]
    .filter((p) => p !== page)
    .map((p) => ({ page: p, start: (p - 1) * size, link: `${url}&start=${(p - 1) * size}` }));
  const pagination: Row = { pages, current_page: page };
  if (spec.hasNext ?? true) {
    pagination.next_page = page + 1;
    pagination.next_page_start = start + size;
    pagination.next_page_link = `${url}&start=${start + size}`;
  }
  const body: Row = {
    general: {
      search_engine: 'google',
      query,
      results_cnt: 123400,
      search_time: 0.42,
      language: 'en',
      location: 'Testland',
      mobile: false,
      basic_view: false,
      search_type: 'text',
      page_title: `${query} - Search`,
      timestamp: spec.timestamp ?? '2025-03-01T10:00:00.000Z',
    },
    input: { original_url: `${url}&start=${start}&brd_json=1`, request_id: `req_${page}` },
    navigation: [{ title: 'Images', href: `${url}&tbm=isch` }],
    organic,
    oragnic,
    images: spec.images ?? [],
    pagination,
    related: spec.related ?? [],
  };
  for (const k of spec.omit ?? []) delete body[k];
  return body;
}

export function imageItem(rank: number, over: Row = {}): Row {
  return {
    original_image: `https://img.example.test/full/${rank}.jpg`,
    link: `https://site${rank}.example.test/gallery`,
    title: `Picture ${rank}`,
    source: `Site ${rank}`,
    source_logo: 'data:image/png;base64,DDDD',
    image: 'data:image/jpeg;base64,EEEE',
    image_alt: `Alt text ${rank}`,
    image_base64: 'data:image/jpeg;base64,FFFF',
    rank,
    global_rank: 20 + rank,
    ...over,
  };
}

// ---------------------------------------------------------------- reviews

let reviewSeq = 0;

export function review(over: Row = {}): Row {
  reviewSeq += 1;
  return {
    review_id: `rev_${reviewSeq}`,
    reviewer: {
      profile_photo_url: `https://photos.example.test/u${reviewSeq}.png`,
      display_name: `Reviewer ${reviewSeq}`,
      link: `https://maps.example.test/contrib/${reviewSeq}`,
    },
    link: `https://maps.example.test/reviews/${reviewSeq}`,
    source: 'Google',
    source_logo: 'https://logos.example.test/g.png',
    rating: '4/5',
    created: '3 weeks ago',
    comment: `Generated comment number ${reviewSeq}.`,
    ...over,
  };
}

export function detail(id: string, value: unknown): Row {
  return { id, name: `Name of ${id}`, value, description: `Question about ${id}` };
}

export function reviewsPage(reviews: Row[]): Row {
  return { reviews };
}

// ---------------------------------------------------------------- company profiles

export function companyProfile(over: Row = {}): Row {
  return {
    input: { url: 'https://social.example.test/company/acme-widgets' },
    id: 'acme-widgets',
    company_id: '99001',
    name: 'Acme Widgets',
    country_code: 'DE',
    locations: ['1 Widget Way, Berlin 10115, DE'],
    formatted_locations: ['1 Widget Way, Berlin, 10115, DE'],
    followers: 12345,
    employees_in_platform: 321,
    about: 'Acme makes generated widgets.',
    specialties: 'widgets, gadgets',
    company_size: '201-500 employees',
    organization_type: 'Privately Held',
    industries: 'Manufacturing',
    website: 'https://acme.example.test',
    registry_url: 'https://registry.example.test/acme',
    founded: 1999,
    employees: [
      {
        img: 'https://img.example.test/e1.png',
        link: 'https://social.example.test/in/e1',
        subtitle: 'CEO',
        title: 'Ada',
      },
      { link: 'https://social.example.test/in/e2', title: 'Bob' },
    ],
    headquarters: 'Berlin',
    image: 'https://img.example.test/cover.png',
    logo: 'https://img.example.test/logo.png',
    similar: [
      {
        Links: 'https://social.example.test/company/other',
        subtitle: 'Manufacturing',
        title: 'Other Co',
        location: 'Hamburg',
      },
      { Links: 'https://social.example.test/company/third', subtitle: 'Retail', title: 'Third Co' },
    ],
    url: 'https://social.example.test/company/acme-widgets',
    updates: [
      {
        title: 'Acme Widgets',
        text: 'We shipped a widget.',
        time: '2d',
        likes_count: '1,234',
        comments_count: 12,
        images: ['https://img.example.test/u1.png'],
        date: '2025-01-02T03:04:05.000Z',
      },
      {
        title: 'Acme Widgets',
        text: 'Hiring!',
        time: '1w Edited',
        external_link: 'https://jobs.example.test',
        videos: [],
      },
    ],
    slogan: 'Widgets for all',
    affiliated: [],
    funding: { last_round_date: '2019-07-10T00:00:00.000Z', last_round_type: 'Series B', rounds: 3 },
    stock_info: null,
    get_directions_url: [{ directions_url: 'https://maps.example.test/?q=acme' }],
    description: 'Acme Widgets | 12,345 followers.',
    sphere: 'Industrial',
    type: 'Company',
    investors: ['Fund One', 'Fund Two'],
    ...over,
  };
}
