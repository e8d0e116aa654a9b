/**
 * The pager of a place's review pages (`reviews`). Review pages carry no pagination block (docs/service.md §5.4):
 * the next page starts at this page's offset plus the reviews it held, and a place ends at an empty page, at
 * `max_pages`, or at a page shorter than its first page (the first page shows the service's page size for that
 * place; a shorter one is the last). The first page size is checkpointed in `ctx.state`, so a resumed crawl that
 * does not read page 1 again still recognises the short last page.
 */
import type { StateStore } from '../../core/types.js';
import { targetUrl, type PageOutcome, type PagePosition, type Pager } from './pager.js';

/** Where the `reviews` crawl checkpoints its discovered pages. */
export const REVIEWS_STATE_KEY = 'reviews:discovered';
/** Reviews on the first page of each place, by fid. */
export const REVIEWS_FIRST_SIZE_KEY = 'reviews:first_page_size';

/** A feature id: two colon-joined hex values, each prefixed `0x`. */
export const FID_PATTERN = /^0x[0-9a-f]+:0x[0-9a-f]+$/i;

export interface ReviewPagesOptions {
  /** Search engine URL the target URLs are built on. */
  engine: string;
  /** Review order (`newestFirst`, …); the service's default when undefined. */
  sort?: string | undefined;
  /** Language of the review pages. */
  hl?: string | undefined;
}

/** Review pages: a chain per place (its fid), unit ids `reviews:<fid>:start:<n>`. */
export function reviewPages(opts: ReviewPagesOptions): Pager {
  const extra: [string, string][] = [];
  if (opts.sort !== undefined) extra.push(['sort', opts.sort]);
  if (opts.hl !== undefined) extra.push(['hl', opts.hl]);
  return {
    name: 'reviews',
    stateKey: REVIEWS_STATE_KEY,
    subjectParam: 'fid',
    chainKey: (fid) => fid,
    unitId: (at) => reviewsUnitId(at.subject, at.start),
    url: (at) => targetUrl(opts.engine, '/reviews', [['fid', at.subject], ['start', at.start], ...extra]),
    async next(payload, at, maxPages, ctx) {
      const n = reviewCount(payload);
      const firstSize = await firstPageSize(ctx.state, at, n);
      return nextReviewsPage(n, at.start, at.page, maxPages, firstSize);
    },
    // The fid is on the row too: a review page does not name its place.
    row: (payload, at, fetchedAt) => ({ ...payload, fid: at.subject, fetched_at: fetchedAt }),
  };
}

/** The place's first page size: recorded from page 1 the first time it is read, read back on later pages. */
async function firstPageSize(state: StateStore, at: PagePosition, reviews: number): Promise<number | undefined> {
  const sizes = { ...(state.get<Record<string, number>>(REVIEWS_FIRST_SIZE_KEY) ?? {}) };
  if (at.page === 1 && reviews > 0 && sizes[at.subject] === undefined) {
    sizes[at.subject] = reviews;
    await state.set(REVIEWS_FIRST_SIZE_KEY, sizes);
  }
  return sizes[at.subject];
}

/**
 * Where the reviews page after this one starts. There is no pagination block: the next offset is `start` plus the
 * reviews on this page. The crawl stops on an empty page, at `maxPages`, or when a page holds fewer reviews than
 * the first page did (`firstPageSize`; the first page itself defines it) — a short page is the last one.
 */
export function nextReviewsPage(
  reviews: number,
  start: number,
  page: number,
  maxPages: number,
  firstPageSize: number | undefined,
): PageOutcome {
  if (reviews === 0) return { stop: 'empty_page' };
  if (page >= maxPages) return { stop: 'max_pages' };
  if (page > 1 && firstPageSize !== undefined && reviews < firstPageSize) return { stop: 'short_page' };
  return { next: start + reviews };
}

/** Reviews on a reviews page. */
export function reviewCount(payload: Record<string, unknown>): number {
  return Array.isArray(payload.reviews) ? payload.reviews.length : 0;
}

/** `reviews:<fid>:start:<n>` (a fid is `0x…:0x…`, so the id holds its colon as is). */
export function reviewsUnitId(fid: string, start: number): string {
  return `reviews:${fid}:start:${start}`;
}

export function parseReviewsUnitId(id: string): { fid: string; start: number } | undefined {
  const m = /^reviews:(.+):start:(\d+)$/.exec(id);
  return m ? { fid: m[1]!, start: Number(m[2]) } : undefined;
}
