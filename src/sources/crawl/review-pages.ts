/**
 * The pager of a place's review pages (`reviews`). Review pages carry no pagination block and no end marker
 * (docs/service.md §5.4), and their size varies ("usually 10"): the next page starts at this page's offset plus the
 * reviews it held, and a place ends only on evidence — an empty page, a page the service already answered, or
 * `max_pages`. A short page is no such evidence (a page of 9 among pages of 10 is the service's page size
 * varying), so a place costs one request more than its pages: the empty page that ends it.
 *
 * Paging by `start` is not documented for reviews (and was deprecated for maps): a service may answer the place's
 * first page for every `start`, or repeat a page. A page holding only reviews of the place's first page, or of the
 * page read before it (both kept in `ctx.state`), is such a repeat: the place ends there, the page is not loaded, and
 * the crawl counts it as billed for nothing — one wasted request per place instead of `max_pages`, each review
 * loaded once.
 */
import type { StateStore } from '../../core/types.js';
import { CursorBound, rejectedCursorWarning } from '../cursor-bound.js';
import { targetUrl, type PageOutcome, type PagePosition, type Pager } from './pager.js';
import type { CrawlIncremental } from './source.js';

/** Reviews per page as the service usually serves them (it varies). */
const REVIEWS_PAGE_SIZE = 10;

/** Where the `reviews` crawl checkpoints its discovered pages. */
export const REVIEWS_STATE_KEY = 'reviews:discovered';
/** The review ids of each place's first page, as last read, by fid. */
export const REVIEWS_FIRST_IDS_KEY = 'reviews:first_page_ids';
/** The review ids of the latest later page read of each place, with its start, by fid. */
export const REVIEWS_LAST_IDS_KEY = 'reviews:last_page_ids';

/** A feature id: two colon-joined 64-bit hex values, each prefixed `0x`. */
export const FID_PATTERN = /^0x[0-9a-f]{1,16}:0x[0-9a-f]{1,16}$/i;

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
    purpose: 'review page',
    stateKey: REVIEWS_STATE_KEY,
    subjectParam: 'fid',
    chainKey: (fid) => fid,
    unitId: (at) => reviewsUnitId(at.subject, at.start),
    url: (at) => targetUrl(opts.engine, '/reviews', [['fid', at.subject], ['start', at.start], ...extra]),
    next: async (payload, at, maxPages) => nextReviewsPage(reviewCount(payload), at.start, at.page, maxPages),
    // The fid is on the row too: a review page does not name its place.
    row: (payload, at, fetchedAt) => ({ ...payload, fid: at.subject, fetched_at: fetchedAt }),
    wrongPage: (payload, at, ctx) => repeatedPage(ctx.state, payload, at),
  };
}

/** What `sluice plan` says a review crawl will request: one page per place, and more found while crawling. */
export function reviewsPlanNote(places: number, maxPages: number): string {
  if (maxPages === 1) return `${places} places, one review page each (max_pages: 1): one paid request per place`;
  return (
    `${places} places; further review pages are discovered while crawling, up to ${maxPages} per place. A place ` +
    'ends at an empty page (review pages have no end marker and vary in size), so each place whose reviews fit in ' +
    'fewer pages costs one request more than its pages; a service that answers a later page with the first page ' +
    'again (docs/service.md §5.4) costs one request per place for nothing'
  );
}

/**
 * Why a review page is one the service already answered for this place, or undefined: every review on it is one of
 * the first page's (a service that does not page by `start`), or one of the page read before it (a page repeated).
 * The first page's ids are recorded each time it is read (every run reads it, so they are this run's); a later
 * page's, when it is not a repeat, replace the place's previous ones.
 */
export async function repeatedPage(
  state: StateStore,
  payload: Record<string, unknown>,
  at: PagePosition,
): Promise<string | undefined> {
  const ids = Array.isArray(payload.reviews)
    ? (payload.reviews as Record<string, unknown>[]).map((r) => String(r?.review_id))
    : [];
  const firsts = state.get<Record<string, string[]>>(REVIEWS_FIRST_IDS_KEY) ?? {};
  if (at.start === 0) {
    if (ids.length > 0) await state.set(REVIEWS_FIRST_IDS_KEY, { ...firsts, [at.subject]: ids });
    return undefined;
  }
  if (ids.length === 0) return undefined;
  const first = new Set(firsts[at.subject] ?? []);
  if (first.size > 0 && ids.every((id) => first.has(id)))
    return `the service answered the place's first page again for start ${at.start} (it does not page reviews by start)`;
  const lasts = state.get<Record<string, { start: number; ids: string[] }>>(REVIEWS_LAST_IDS_KEY) ?? {};
  // Only a page before this one is evidence: a page read again (a unit retried) is compared with its predecessor.
  const last = lasts[at.subject];
  if (last !== undefined && last.start < at.start) {
    const before = new Set(last.ids);
    if (ids.every((id) => before.has(id)))
      return `the service answered the page at start ${last.start} again for start ${at.start}`;
  }
  if (last === undefined || last.start < at.start)
    await state.set(REVIEWS_LAST_IDS_KEY, { ...lasts, [at.subject]: { start: at.start, ids } });
  return undefined;
}

/**
 * Where the reviews page after this one starts. There is no pagination block: the next offset is `start` plus the
 * reviews on this page, whatever their number. The crawl stops on an empty page or at `maxPages`; a page repeated
 * is caught before (`repeatedPage`).
 */
export function nextReviewsPage(reviews: number, start: number, page: number, maxPages: number): PageOutcome {
  if (reviews === 0) return { stop: 'empty_page' };
  if (page >= maxPages) return { stop: 'max_pages' };
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

/**
 * A page's checkpoint in an incremental review crawl: every review id the page showed (loaded now or before) and
 * the newest review date known for the place. The newest reviews are on page 1, which every run fetches, so the
 * latest page-1 checkpoint always names them.
 */
export interface ReviewsCheckpoint {
  fid: string;
  ids: string[];
  newest?: string;
  /** Reviews of the place loaded so far, up to this page included. */
  loaded?: number;
  /** A backfill's page (`--from`): counted for the place only where its window joins what nightly runs loaded. */
  backfill?: { from: string };
  /**
   * On a backfill's page: the nightly checkpoint of the same page it replaces (checkpoints are kept by page, the
   * latest committed), so nightly runs still read what they loaded.
   */
  nightly?: ReviewsCheckpoint;
}

/** Where an incremental review crawl keeps, for its run, each place's newest date and review count before it. */
export const REVIEWS_BEFORE_KEY = 'reviews:before_run';

interface PlaceBefore {
  newest?: string;
  loaded: number;
}

interface KnownPlace {
  ids: Set<string>;
  newest?: string;
  /** Reviews of the place loaded by earlier runs. */
  loaded: number;
}

/**
 * Incremental review crawls (`sort: newestFirst`): a place's pages stop at the first page that reaches a review
 * already loaded — by id, or dated before the place's newest committed review — and that page's row keeps only the
 * reviews before it. Counts the requests a full crawl would have made on top, for the run's log.
 */
export function reviewsIncremental(maxPages: number): CrawlIncremental {
  const known = new Map<string, KnownPlace>();
  let saved = 0;
  let stopped = 0;
  /** A backfill run's window start (ms): reviews dated after it are reloaded. */
  let window: number | undefined;
  /** In a backfill: the nightly checkpoint of each page, by unit id, which the page's new checkpoint carries on. */
  const nightlyOf = new Map<string, ReviewsCheckpoint>();
  // A review dated in the future is loaded, but never becomes a place's newest date (cursor-bound.ts): every later
  // run would take all of the place's reviews for ones loaded before and stop at its first page.
  const bound = new CursorBound();
  return {
    async plan(subjects, ctx) {
      bound.start(ctx);
      known.clear();
      window = ctx.backfill !== undefined ? Date.parse(String(ctx.backfill.from)) : undefined;
      // A backfill pages every place from its first page back to the window's start, whatever was loaded before.
      if (window !== undefined) {
        nightlyOf.clear();
        for (const [unit, cp] of ctx.checkpoints ?? []) {
          const c = cp as Partial<ReviewsCheckpoint> | null;
          const nightly = c?.backfill === undefined ? c : c.nightly;
          if (typeof nightly?.fid === 'string') nightlyOf.set(unit, nightly as ReviewsCheckpoint);
        }
        return subjects;
      }
      const before: Record<string, PlaceBefore> = {};
      for (const c of countedCheckpoints(ctx.checkpoints?.values() ?? [], (d) => bound.accepts(d, ctx))) {
        let place = known.get(c.fid);
        if (!place) known.set(c.fid, (place = { ids: new Set(), loaded: 0 }));
        for (const id of c.ids) place.ids.add(id);
        const b = (before[c.fid] ??= { loaded: 0 });
        if (typeof c.loaded === 'number') b.loaded = Math.max(b.loaded, c.loaded);
        if (c.newest !== undefined && (b.newest === undefined || c.newest > b.newest) && bound.accepts(c.newest, ctx))
          b.newest = c.newest;
      }
      // Dates and counts as they stood when the run started: a resumed run must not take the newest date its own
      // first pages committed for a bound, or the new reviews on its later pages would look old. Ids are safe.
      const saved = ctx.state.get<Record<string, PlaceBefore>>(REVIEWS_BEFORE_KEY);
      if (saved === undefined && !ctx.dryRun) await ctx.state.set(REVIEWS_BEFORE_KEY, before);
      for (const [fid, place] of known) {
        const b = (saved ?? before)[fid];
        place.loaded = b?.loaded ?? 0;
        if (b?.newest !== undefined) place.newest = b.newest;
      }
      return subjects;
    },
    page(payload, at, fetchedAt) {
      const reviews = Array.isArray(payload.reviews) ? (payload.reviews as Record<string, unknown>[]) : [];
      const place = known.get(at.subject);
      let fresh = reviews.length;
      if (window !== undefined)
        fresh = reviews.findIndex((r) => typeof r.date === 'string' && Date.parse(r.date) <= window!);
      else if (place)
        fresh = reviews.findIndex((r) => {
          const date = typeof r.date === 'string' ? r.date : undefined;
          return (
            place.ids.has(String(r.review_id)) ||
            (place.newest !== undefined && date !== undefined && date < place.newest)
          );
        });
      const stop = (window !== undefined || place !== undefined) && fresh >= 0;
      if (fresh < 0) fresh = reviews.length;
      const kept = reviews.slice(0, fresh);
      let newest = place?.newest;
      let rejected: { count: number; first: string } | undefined;
      const clock = { now: () => fetchedAt.getTime() };
      for (const r of kept) {
        if (typeof r.date !== 'string' || (newest !== undefined && r.date <= newest)) continue;
        if (bound.accepts(r.date, clock)) newest = r.date;
        else if (rejected) rejected.count++;
        else rejected = { count: 1, first: r.date };
      }
      const loaded = (place?.loaded ?? 0) + at.start + kept.length;
      if (stop && window === undefined) {
        stopped++;
        // A full crawl pages through every review, pages of about 10, then the empty page that ends the place.
        const full = Math.min(maxPages, Math.ceil(loaded / REVIEWS_PAGE_SIZE) + 1);
        saved += Math.max(0, full - at.page);
      }
      const checkpoint: ReviewsCheckpoint = {
        fid: at.subject,
        ids: reviews.map((r) => String(r.review_id)),
        ...(newest !== undefined && { newest }),
        loaded,
      };
      if (window !== undefined) {
        checkpoint.backfill = { from: new Date(window).toISOString() };
        const nightly = nightlyOf.get(reviewsUnitId(at.subject, at.start));
        if (nightly !== undefined) checkpoint.nightly = nightly;
      }
      return {
        payload: stop ? { ...payload, reviews: kept } : payload,
        stop,
        checkpoint,
        ...(rejected && {
          warning: rejectedCursorWarning(`reviews of ${at.subject} page ${at.page}`, 'date', rejected, bound),
        }),
      };
    },
    summary: () =>
      stopped === 0
        ? undefined
        : `reviews (incremental): ${stopped} place(s) reached reviews loaded before; about ${saved} page request(s) saved`,
  };
}

/**
 * The checkpoints a nightly run reads a place's known reviews from: every nightly page's, and a backfill's only where
 * its window joins them — it starts at or before the place's newest date loaded (counting the windows that joined
 * before it), so everything after that date is loaded — and, always, the nightly checkpoint a backfill's replaced. A window that starts later left a gap between the two the
 * next nightly run still loads; a place no nightly run loaded is read in full.
 */
export function countedCheckpoints(
  checkpoints: Iterable<unknown>,
  accepts: (date: string) => boolean = () => true,
): ReviewsCheckpoint[] {
  const counted: ReviewsCheckpoint[] = [];
  const windows: ReviewsCheckpoint[] = [];
  const newest = new Map<string, number>();
  for (const cp of checkpoints) {
    let c = cp as Partial<ReviewsCheckpoint> | null | undefined;
    if (typeof c?.fid !== 'string' || !Array.isArray(c.ids)) continue;
    if (c.backfill !== undefined) {
      windows.push(c as ReviewsCheckpoint);
      c = c.nightly;
      if (typeof c?.fid !== 'string' || !Array.isArray(c.ids)) continue;
    }
    counted.push(c as ReviewsCheckpoint);
    const at = c.newest !== undefined && accepts(c.newest) ? Date.parse(c.newest) : NaN;
    if (!Number.isNaN(at) && at > (newest.get(c.fid) ?? -Infinity)) newest.set(c.fid, at);
  }
  windows.sort((a, b) => Date.parse(a.backfill!.from) - Date.parse(b.backfill!.from));
  for (const w of windows) {
    const reached = newest.get(w.fid);
    if (reached === undefined || Date.parse(w.backfill!.from) > reached) continue;
    counted.push(w);
    const at = w.newest !== undefined && accepts(w.newest) ? Date.parse(w.newest) : NaN;
    if (!Number.isNaN(at) && at > reached) newest.set(w.fid, at);
  }
  return counted;
}
