/**
 * The pager strategy contract of the one crawl source (source.ts), the way dlt's paginators drive one loop: a crawl
 * is a set of chains of pages (one chain per search query, per place), and a strategy says how one kind of chain
 * is paged — the target URL of a page, its unit id, where the next page starts (read from the fetched page), and
 * the row a page yields. Everything else (planning, checkpointing discovered pages, fetching under the crawl's
 * rate limiter, successors of committed pages) is the crawl source's, written once.
 */
import { SluiceError } from '../../core/errors.js';
import type { Row, SourceContext } from '../../core/types.js';

/** Where one page sits in its chain. */
export interface PagePosition {
  /** What the chain crawls: a search query, a place's fid. */
  subject: string;
  /** Offset of the page's first item (the target URL's `start`); 0 on the first page. */
  start: number;
  /** 1-based page number. */
  page: number;
}

/**
 * Why a chain ends at a page: evidence only — the service's end marker (`last_page`: no next page), an empty page,
 * `max_pages`, a next page that does not move forward. A short page is none: page sizes vary.
 */
export type StopReason = 'last_page' | 'empty_page' | 'max_pages' | 'no_progress';

/** Where the next page of a chain starts, or why the chain ends at this page. */
export type PageOutcome = { next: number } | { stop: StopReason };

export interface Pager {
  /** Names the crawl in log lines (`serp`, `reviews`). */
  readonly name: string;
  /** What one of its pages is in the ledger of paid work: `search page`, `map search page`, `review page`. */
  readonly purpose: string;
  /** Key in `ctx.state` under which the crawl's discovered chains are checkpointed. */
  readonly stateKey: string;
  /** The unit param that holds the chain's subject (`query`, `fid`): normalizers read it. */
  readonly subjectParam: string;
  /** The chain's key in the checkpoint. */
  chainKey(subject: string): string;
  /** The page's unit id, the same on every run. */
  unitId(at: PagePosition): string;
  /** The page's target URL (what `POST /request` is asked to fetch). */
  url(at: PagePosition): string;
  /** Where the page after this one starts, or why there is none, from the fetched page. */
  next(payload: Record<string, unknown>, at: PagePosition, maxPages: number, ctx: SourceContext): Promise<PageOutcome>;
  /** The row a fetched page yields; `fetchedAt` is an ISO timestamp, carried on the row for the normalizers. */
  row(payload: Record<string, unknown>, at: PagePosition, fetchedAt: string): Row;
  /**
   * Why the fetched page is not the page asked for (the service answered another page, or one it already answered),
   * or undefined when it is or cannot tell. Such a page ends its chain with a warning and yields no row: its items
   * would be written at the requested page's positions (over another page's), or loaded twice. It was billed all the
   * same, and the crawl counts it. May keep in `ctx.state` what later pages are compared with. Absent: pages are
   * taken as asked.
   */
  wrongPage?(
    payload: Record<string, unknown>,
    at: PagePosition,
    ctx: SourceContext,
  ): string | undefined | Promise<string | undefined>;
}

/** `{engine}/<path>?<params>&brd_json=1`, in the given parameter order. */
export function targetUrl(engine: string, pathname: string, params: [string, string | number | boolean][]): string {
  const url = new URL(pathname, engine);
  for (const [k, v] of params) url.searchParams.set(k, String(v));
  url.searchParams.set('brd_json', '1');
  return url.toString();
}

/** The parsed page object; anything else (HTML, a list) means the target URL was not answered as parsed JSON. */
export function pagePayload(payload: unknown, unitId: string): Record<string, unknown> {
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload))
    return payload as Record<string, unknown>;
  throw new SluiceError(`${unitId}: the service returned ${describe(payload)}, not a parsed JSON page`, {
    hint: 'the zone must be a SERP zone that honours brd_json=1; check `zone` and `engine`',
  });
}

function describe(v: unknown): string {
  if (typeof v === 'string') return `text (${v.slice(0, 40).replace(/\s+/g, ' ')}…)`;
  return Array.isArray(v) ? 'a JSON array' : String(v);
}
