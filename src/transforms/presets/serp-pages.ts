/**
 * `serp_pages`: one row per fetched search page, from its `general` block plus crawl context: what was searched,
 * how many results the engine claimed, how long it took, and whether another page follows.
 */
import type { Row, TransformContext } from '../../core/types.js';
import { parseIsoTimestamp } from '../../core/values.js';
import { asObject, toBool, toInteger, toNumber, toText } from '../coerce.js';
import { hasNextPage, isSerpPage, mergedOrganic, serpPageContext } from './serp-page.js';

export function normalizeSerpPages(row: Row, ctx: TransformContext): Row[] {
  if (!isSerpPage(row)) return [];
  const page = serpPageContext(row, ctx);
  const general = asObject(row.general) ?? {};
  const input = asObject(row.input);
  const pagination = asObject(row.pagination);
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
      fetched_at: page.fetched_at,
    },
  ];
}
