/**
 * What the SERP presets share: where a result page sits in its crawl (query, page, start offset) and the page's
 * organic results with the misspelled `oragnic` list merged in.
 */
import type { Row, TransformContext } from '../../core/types.js';
import { parseIsoTimestamp } from '../../core/values.js';
import { column, type DeclaredColumn } from '../../core/declared.js';
import { BIGINT, TIMESTAMP, VARCHAR } from '../../core/logical-type.js';
import { asObject, isPlainObject, toInteger, toText } from '../coerce.js';
import { rowFetchedAt } from './preset.js';

export interface SerpPageContext {
  query: string | null;
  /** 1-based page number. */
  page: number | null;
  /** Offset of the page's first result (the `start` parameter), 0 on the first page. */
  start: number | null;
  request_id: string | null;
  /** Fetch time the crawl put on the page row, else the service's own `general.timestamp`. */
  fetched_at: Date | null;
}

/** The first columns of every SERP preset's rows: where the page sits in its crawl. */
export const PAGE_COLUMNS: readonly DeclaredColumn[] = [
  column('query', VARCHAR, "The search query (the unit's, else `general.query`)."),
  column('page', BIGINT, "Page number, 1-based (the unit's, else from `pagination`)."),
  column('start', BIGINT, "Offset of the page's first result (`start` parameter); 0 on page 1."),
];

/** The last columns of every SERP preset's rows: which request fetched the page, and when. */
export const FETCH_COLUMNS: readonly DeclaredColumn[] = [
  column('request_id', VARCHAR, "The service's request id (`input.request_id`)."),
  column('fetched_at', TIMESTAMP, "When the page was fetched (the crawl's `fetched_at`, else `general.timestamp`)."),
];

/** A row is a SERP page payload when it carries any of the page-level blocks. */
export function isSerpPage(row: Row): boolean {
  return (
    'general' in row ||
    'organic' in row ||
    'oragnic' in row ||
    'pagination' in row ||
    'related' in row ||
    'images' in row ||
    'input' in row
  );
}

export function serpPageContext(row: Row, ctx: TransformContext): SerpPageContext {
  const p = ctx.unitParams;
  const general = asObject(row.general);
  const pagination = asObject(row.pagination);
  const input = asObject(row.input);
  const start = toInteger(p.start) ?? startFromPagination(pagination);
  const page = toInteger(p.page) ?? toInteger(pagination?.current_page) ?? pageFromStart(start, pagination);
  return {
    query: toText(p.query) ?? toText(general?.query),
    page,
    start: start ?? (page === 1 ? 0 : null),
    request_id: toText(input?.request_id),
    fetched_at: rowFetchedAt(row) ?? parseIsoTimestamp(general?.timestamp),
  };
}

function pagesOf(pagination: Record<string, unknown> | undefined): { page: number; start: number }[] {
  const pages = Array.isArray(pagination?.pages) ? pagination.pages : [];
  const out: { page: number; start: number }[] = [];
  for (const e of pages) {
    if (!isPlainObject(e)) continue;
    const page = toInteger(e.page);
    const start = toInteger(e.start);
    if (page !== null && start !== null) out.push({ page, start });
  }
  return out.sort((a, b) => a.page - b.page);
}

/** The current page's offset, when the page list happens to include the current page. */
function startFromPagination(pagination: Record<string, unknown> | undefined): number | null {
  const current = toInteger(pagination?.current_page);
  if (current === null) return null;
  if (current === 1) return 0;
  return pagesOf(pagination).find((e) => e.page === current)?.start ?? null;
}

/** Page number from an offset: by the page list when it names the offset, else by the page size it implies. */
function pageFromStart(start: number | null, pagination: Record<string, unknown> | undefined): number | null {
  if (start === null) return null;
  if (start === 0) return 1;
  const pages = pagesOf(pagination);
  const exact = pages.find((e) => e.start === start);
  if (exact) return exact.page;
  // The page size is read from the data, never assumed: two listed pages, or this page and the next one.
  let size: number | null = null;
  const [a, b] = pages;
  if (a && b && b.page > a.page) size = (b.start - a.start) / (b.page - a.page);
  const nextStart = toInteger(pagination?.next_page_start);
  if (size === null && nextStart !== null && nextStart > start) size = nextStart - start;
  return size !== null && Number.isInteger(size) && size > 0 ? Math.floor(start / size) + 1 : null;
}

export interface OrganicItem {
  item: Record<string, unknown>;
  list: 'organic' | 'oragnic';
}

/**
 * `organic` then `oragnic`, de-duplicated by link (the first occurrence wins; items with no link are all kept,
 * since nothing identifies them as repeats).
 */
export function mergedOrganic(row: Row): OrganicItem[] {
  const seen = new Set<string>();
  const out: OrganicItem[] = [];
  for (const list of ['organic', 'oragnic'] as const) {
    const items = row[list];
    if (!Array.isArray(items)) continue;
    for (const item of items) {
      if (!isPlainObject(item)) continue;
      const link = toText(item.link);
      if (link !== null && link !== '') {
        if (seen.has(link)) continue;
        seen.add(link);
      }
      out.push({ item, list });
    }
  }
  return out;
}

/** `next_page`, `next_page_start` or `next_page_link` present means the crawl has another page. */
export function hasNextPage(row: Row): boolean {
  const p = asObject(row.pagination);
  if (!p) return false;
  return (
    toInteger(p.next_page) !== null ||
    toInteger(p.next_page_start) !== null ||
    (typeof p.next_page_link === 'string' && p.next_page_link !== '')
  );
}
