/**
 * `serp_pages`: one row per fetched search page, from its `general` block plus crawl context: what was searched,
 * how many results the engine claimed, how long it took, and whether another page follows.
 *
 * The page's other sections are kept too, so nothing the service sent is dropped without a word: the ones the
 * spec and real pages show as typed nested columns (`navigation`, `knowledge`, `videos`, `people_also_ask`,
 * `perspectives`, `top_stories`), every remaining top-level section in `other_sections` (section name → its value,
 * as JSON). The sections other presets turn into rows (`organic`, `images`, `related`) are counted here, and the
 * raw `html` of `brd_json=html` pages is left out: it is the whole page again.
 */
import type { Row, TransformContext } from '../../core/types.js';
import { parseIsoTimestamp } from '../../core/values.js';
import { column, struct, type DeclaredSchema } from '../../core/declared.js';
import { BIGINT, BOOLEAN, DOUBLE, JSON_TYPE, TIMESTAMP, VARCHAR, listOf } from '../../core/logical-type.js';
import { asObject, isPlainObject, nonEmpty, toBool, toInteger, toNumber, toText, urlOrNull } from '../coerce.js';
import { FETCH_COLUMNS, PAGE_COLUMNS, hasNextPage, isSerpPage, mergedOrganic, serpPageContext } from './serp-page.js';

const NAVIGATION = struct({ title: VARCHAR, href: VARCHAR });
const KNOWLEDGE = struct({
  title: VARCHAR,
  subtitle: VARCHAR,
  type: VARCHAR,
  description: VARCHAR,
  description_source: VARCHAR,
  description_link: VARCHAR,
  kgmid: VARCHAR,
  link: VARCHAR,
  image_url: VARCHAR,
  fid: VARCHAR,
  rating: DOUBLE,
  reviews_cnt: BIGINT,
  facts: listOf(struct({ predicate: VARCHAR, title: VARCHAR, value: VARCHAR, link: VARCHAR })),
});
const VIDEO = struct({
  link: VARCHAR,
  title: VARCHAR,
  source: VARCHAR,
  author: VARCHAR,
  date: VARCHAR,
  duration: VARCHAR,
  duration_sec: BIGINT,
  has_image: BOOLEAN,
  image_url: VARCHAR,
  rank: BIGINT,
  global_rank: BIGINT,
});
const QUESTION = struct({
  question: VARCHAR,
  answer: VARCHAR,
  answer_source: VARCHAR,
  answer_link: VARCHAR,
  answer_display_link: VARCHAR,
  answers: listOf(struct({ type: VARCHAR, text: VARCHAR, rank: BIGINT })),
  rank: BIGINT,
  global_rank: BIGINT,
});
const PERSPECTIVE = struct({
  title: VARCHAR,
  text: VARCHAR,
  author: VARCHAR,
  source: VARCHAR,
  date: VARCHAR,
  link: VARCHAR,
  image_url: VARCHAR,
  rank: BIGINT,
  global_rank: BIGINT,
});
const STORY = struct({
  title: VARCHAR,
  link: VARCHAR,
  source: VARCHAR,
  date: VARCHAR,
  image_url: VARCHAR,
  rank: BIGINT,
  global_rank: BIGINT,
});

/** Every row has exactly these keys, in this order. */
export const SERP_PAGES_COLUMNS: DeclaredSchema = [
  ...PAGE_COLUMNS,
  column('search_engine', VARCHAR, 'Engine that answered, e.g. `google`.'),
  column('detected_query', VARCHAR, 'The query as the engine understood it.'),
  column('results_cnt', BIGINT, 'Number of results the engine claimed.'),
  column('search_time', DOUBLE, 'Seconds the engine said the search took.'),
  column('language', VARCHAR, 'Language of the page.'),
  column('location', VARCHAR, 'Location searched from (`location`, or `country`).'),
  column('country_code', VARCHAR, 'Country code searched from.'),
  column('mobile', BOOLEAN, 'A mobile page (`mobile` or `is_mobile`).'),
  column('basic_view', BOOLEAN, 'The engine served its basic view.'),
  column('search_type', VARCHAR, 'Search type, e.g. `text`, `shopping`.'),
  column('page_title', VARCHAR, 'Title of the result page.'),
  column('timestamp', TIMESTAMP, 'When the service fetched the page (`general.timestamp`).'),
  column('organic_count', BIGINT, 'Organic results on the page (`organic` and `oragnic`, de-duplicated).', false),
  column('images_count', BIGINT, 'Image results on the page.', false),
  column('related_count', BIGINT, 'Related-search entries on the page.', false),
  column('has_next_page', BOOLEAN, 'The pagination names a next page.', false),
  column('next_page_start', BIGINT, 'Offset of the next page.'),
  FETCH_COLUMNS[0]!,
  column('original_url', VARCHAR, 'The URL the service fetched (`input.original_url`).'),
  column('navigation', listOf(NAVIGATION), 'Navigation links of the page (Images, News, …).'),
  column('knowledge', KNOWLEDGE, 'The knowledge panel; `fid` is the place id reviews are fetched by.'),
  column('videos', listOf(VIDEO), 'Video results.'),
  column('people_also_ask', listOf(QUESTION), '"People also ask" questions, with their answers as text.'),
  column('perspectives', listOf(PERSPECTIVE), 'Perspectives (forum and social posts).'),
  column('top_stories', listOf(STORY), 'Top stories (news).'),
  column(
    'other_sections',
    JSON_TYPE,
    'Every other top-level section of the page, by name (ads, shopping, ai_overview, …); null when none.',
  ),
  FETCH_COLUMNS[1]!,
];

/** Top-level keys that have a column of their own here or rows from another preset; `html` is the page again. */
const HANDLED = new Set([
  'general',
  'input',
  'organic',
  'oragnic',
  'images',
  'related',
  'pagination',
  'fetched_at',
  'html',
  'navigation',
  'knowledge',
  'videos',
  'people_also_ask',
  'perspectives',
  'top_stories',
]);

export function normalizeSerpPages(row: Row, ctx: TransformContext): Row[] {
  if (!isSerpPage(row)) return [];
  const page = serpPageContext(row, ctx);
  const general = asObject(row.general) ?? {};
  const input = asObject(row.input);
  const pagination = asObject(row.pagination);
  let other: Row | null = null;
  for (const k in row) if (!HANDLED.has(k) && row[k] !== undefined) (other ??= {})[k] = row[k];
  return [
    {
      query: page.query,
      page: page.page,
      start: page.start,
      search_engine: toText(general.search_engine),
      detected_query: toText(general.detected_query),
      results_cnt: toInteger(general.results_cnt),
      search_time: toNumber(general.search_time),
      language: toText(general.language),
      // The full JSON names the place `location`; other variants say `country`.
      location: toText(general.location) ?? toText(general.country),
      country_code: toText(general.country_code),
      mobile: toBool(general.mobile) ?? toBool(general.is_mobile),
      basic_view: toBool(general.basic_view),
      search_type: toText(general.search_type),
      page_title: toText(general.page_title),
      timestamp: parseIsoTimestamp(general.timestamp),
      organic_count: mergedOrganic(row).length,
      images_count: Array.isArray(row.images) ? row.images.length : 0,
      related_count: Array.isArray(row.related) ? row.related.length : 0,
      has_next_page: hasNextPage(row),
      next_page_start: toInteger(pagination?.next_page_start),
      request_id: page.request_id,
      original_url: toText(input?.original_url),
      navigation: listOfItems(row.navigation, (e) => ({ title: toText(e.title), href: toText(e.href) })),
      knowledge: knowledge(row.knowledge),
      videos: listOfItems(row.videos, video),
      people_also_ask: listOfItems(row.people_also_ask, question),
      perspectives: listOfItems(row.perspectives, perspective),
      // The full JSON nests the stories in `{items: […]}`; a bare list is taken as well.
      top_stories: listOfItems(asObject(row.top_stories)?.items ?? row.top_stories, story),
      other_sections: other,
      fetched_at: page.fetched_at,
    },
  ];
}

/** The section's objects mapped to one full shape each (so the column is one stable LIST(STRUCT)); null when absent. */
function listOfItems(v: unknown, map: (e: Record<string, unknown>) => Row): Row[] | null {
  if (!Array.isArray(v)) return null;
  return v.filter(isPlainObject).map(map);
}

function ranks(e: Record<string, unknown>): { rank: number | null; global_rank: number | null } {
  return { rank: toInteger(e.rank), global_rank: toInteger(e.global_rank) };
}

function knowledge(v: unknown): Row | null {
  const k = asObject(v);
  if (!k) return null;
  return {
    title: toText(k.title),
    subtitle: toText(k.subtitle),
    type: toText(k.type),
    description: toText(k.description),
    description_source: toText(k.description_source),
    description_link: toText(k.description_link),
    kgmid: toText(k.kgmid),
    link: toText(k.link),
    image_url: urlOrNull(k.image_url) ?? urlOrNull(k.image),
    fid: toText(k.fid),
    rating: toNumber(k.rating),
    reviews_cnt: toInteger(k.reviews_cnt),
    facts: listOfItems(k.facts, (f) => ({
      predicate: toText(f.predicate),
      title: toText(f.title),
      value: toText(f.value),
      link: toText(f.link),
    })),
  };
}

function video(e: Record<string, unknown>): Row {
  return {
    link: toText(e.link),
    title: toText(e.title),
    source: toText(e.source),
    author: toText(e.author),
    date: toText(e.date),
    duration: toText(e.duration),
    duration_sec: toInteger(e.duration_sec),
    has_image: nonEmpty(e.image) || nonEmpty(e.image_base64) || nonEmpty(e.image_url),
    image_url: urlOrNull(e.image_url) ?? urlOrNull(e.image),
    ...ranks(e),
  };
}

function question(e: Record<string, unknown>): Row {
  return {
    question: toText(e.question),
    answer: toText(e.answer),
    answer_source: toText(e.answer_source) ?? toText(e.title),
    answer_link: toText(e.answer_link) ?? toText(e.link),
    answer_display_link: toText(e.answer_display_link) ?? toText(e.display_link),
    answers: listOfItems(e.answers, (a) => ({
      type: toText(a.type),
      text: answerText(a.value),
      rank: toInteger(a.rank),
    })),
    ...ranks(e),
  };
}

/** An answer's value is text, or an object holding `text` (other shapes are kept as their JSON). */
function answerText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  const text = asObject(v)?.text;
  return typeof text === 'string' ? text : JSON.stringify(v);
}

function perspective(e: Record<string, unknown>): Row {
  return {
    title: toText(e.title),
    text: toText(e.text),
    author: toText(e.author),
    source: toText(e.source),
    date: toText(e.date),
    link: toText(e.link),
    image_url: urlOrNull(e.image_url) ?? urlOrNull(e.image),
    ...ranks(e),
  };
}

function story(e: Record<string, unknown>): Row {
  return {
    title: toText(e.title),
    link: toText(e.link),
    source: toText(e.source),
    date: toText(e.date),
    image_url: urlOrNull(e.image_url) ?? urlOrNull(e.image),
    ...ranks(e),
  };
}
