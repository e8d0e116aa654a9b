/**
 * `reviews.from_serp`: the places whose reviews are crawled, found on search pages. The search pages of the given
 * queries are fetched inside `plan` (through the crawl's rate limiter), one query's pages after another; the place
 * ids (`fid`) they carry — a web page's knowledge panel, every result of a map search page, a place page's own
 * (search-pages.ts `placeFids`) — de-duplicated, in query order, are the places.
 *
 * Each search is paid, and the places a query finds change slowly, while their reviews are what is new each night:
 * the fids found for each query are kept in the pipeline's state across runs (`kept:`, core/source-contract.ts) with
 * when they were found, and used again until `from_serp.refresh_after` has passed (default 7 days), so most nights
 * pay for review pages only. A run that starts over (`--fresh`, `--reset-cursor`) searches again. The same record
 * makes a resumed run reuse the searches its killed attempt paid for. In a dry run nothing is fetched: the searches a
 * run would pay for are reported, and the kept places of the others are used.
 *
 * Queries that found no place are named in a warning; when no query found one, the run would load nothing, which
 * is said loudly, or (`on_no_places: fail`) fails the plan before any review page is requested.
 */
import { SluiceError } from '../../core/errors.js';
import { KEPT_STATE_PREFIX } from '../../core/source-contract.js';
import type { SourceContext } from '../../core/types.js';
import { FID_PATTERN } from './review-pages.js';
import { pagePayload, type PagePosition, type Pager } from './pager.js';
import { placeFids } from './search-pages.js';
import type { PageFetch } from './source.js';

/** The places each search found, kept across runs, by search (`searchKey`). */
export const REVIEWS_PLACES_KEY = `${KEPT_STATE_PREFIX}reviews:places`;

/** What one search found, and when (the run's clock: the service's). */
export interface FoundPlaces {
  fids: string[];
  searched_at: string;
}

export interface PlacesFromSearchOptions {
  queries: string[];
  /** The search pager (its engine, vertical and extra params). */
  search: Pager;
  /** SERP pages per query read at most. */
  maxPages: number;
  fetch: PageFetch;
  /** What a search that finds no place at all does: warn and load nothing (default), or fail the plan. */
  onNoPlaces?: 'warn' | 'fail';
  /** How long the places a search found are used before it is made again (`from_serp.refresh_after`), ms. */
  refreshAfterMs: number;
  /** `refresh_after` as configured, for the log. */
  refreshAfter: string;
}

/** Queries named in a warning at most; the rest are counted. */
const NAMED_QUERIES = 10;

export async function placesFromSearch(opts: PlacesFromSearchOptions, ctx: SourceContext): Promise<string[]> {
  const { queries } = opts;
  const kept = ctx.state.get<Record<string, FoundPlaces>>(REVIEWS_PLACES_KEY) ?? {};
  const key = (q: string): string => searchKey(q, opts);
  // The searches of queries no longer configured are forgotten with the next save.
  const known = Object.fromEntries(queries.flatMap((q) => (kept[key(q)] ? [[key(q), kept[key(q)]!]] : [])));
  const now = (ctx.now ?? Date.now)();
  const due = queries.filter((q) => {
    const at = Date.parse(known[key(q)]?.searched_at ?? '');
    return Number.isNaN(at) || now - at >= opts.refreshAfterMs;
  });
  reportReuse(queries.length - due.length, queries, known, opts, ctx);
  if (ctx.dryRun) {
    for (const q of due)
      ctx.report?.(
        'request',
        `POST /request ${opts.search.url({ subject: q, start: 0, page: 1 })} (paid: search page read for place ids)`,
      );
    if (due.length > 0)
      ctx.report?.(
        'note',
        `the review pages of the places found by ${due.length} search queries are planned when the run fetches them`,
      );
  } else if (due.length > 0) {
    // A failed query fails the plan; queries that finished stay kept for the rerun.
    let saving = Promise.resolve();
    await Promise.all(
      due.map(async (q) => {
        const search = await searchQuery(q, opts, ctx);
        known[key(q)] = { fids: search.fids, searched_at: new Date(now).toISOString() };
        saving = saving.then(() => ctx.state.set(REVIEWS_PLACES_KEY, { ...known }));
        await saving;
        // Kept: a resumed run does not search again, so these pages are not paid twice.
        for (const page of search.pages) ctx.paid.settled(page);
      }),
    );
  }
  const fids: string[] = [];
  const searched: string[] = [];
  const placeless: string[] = [];
  for (const q of queries) {
    const found = due.includes(q) && ctx.dryRun ? undefined : known[key(q)]?.fids;
    if (found === undefined) continue; // a dry run that has not searched it yet
    searched.push(q);
    if (!found.some((f) => FID_PATTERN.test(f))) placeless.push(q);
    fids.push(...found);
  }
  const unique = [...new Set(fids)];
  const valid = unique.filter((f) => FID_PATTERN.test(f));
  for (const f of unique) if (!FID_PATTERN.test(f)) ctx.log.warn(`ignoring place id "${f}": not a 0x…:0x… fid`);
  ctx.log.info(`from_serp: ${valid.length} places from ${queries.length} queries`);
  if (searched.length > 0 && placeless.length === searched.length) noPlaces(searched, opts, ctx);
  else if (placeless.length > 0)
    ctx.log.warn(`from_serp: ${placeless.length} of ${searched.length} queries found no place: ${named(placeless)}`);
  return valid;
}

/**
 * What identifies a search across runs: its first page's address (engine, vertical, query, extra parameters) and how
 * many pages of it are read. Another search (a changed parameter) is made anew.
 */
function searchKey(query: string, opts: Pick<PlacesFromSearchOptions, 'search' | 'maxPages'>): string {
  return `${opts.search.url({ subject: query, start: 0, page: 1 })} max_pages=${opts.maxPages}`;
}

/** Says how many searches are not paid for again, and until when (the log, and `sluice plan`). */
function reportReuse(
  reused: number,
  queries: readonly string[],
  known: Record<string, FoundPlaces>,
  opts: PlacesFromSearchOptions,
  ctx: SourceContext,
): void {
  if (reused === 0) return;
  const times = queries
    .map((q) => known[searchKey(q, opts)]?.searched_at)
    .filter((t): t is string => t !== undefined)
    .sort();
  const oldest = times[0]!;
  const again = new Date(Date.parse(oldest) + opts.refreshAfterMs).toISOString();
  const line =
    `from_serp: the places of ${reused} of ${queries.length} queries are reused from searches made since ${oldest} ` +
    `(no search request: they are searched again after refresh_after ${opts.refreshAfter}, from ${again})`;
  ctx.log.info(line);
  ctx.report?.('note', line);
}

/** No query found a place: the reviews crawl has nothing to read. */
function noPlaces(queries: string[], opts: PlacesFromSearchOptions, ctx: SourceContext): void {
  const what = `from_serp found no place on the ${opts.search.name} result pages of any of its ${queries.length} queries (${named(queries)})`;
  const hint =
    opts.search.name === 'maps'
      ? 'check the queries: map search pages list the places they match'
      : 'web result pages carry a place only in a knowledge panel: search maps instead (`from_serp.search: maps`), or check the queries';
  if (opts.onNoPlaces === 'fail')
    throw new SluiceError(what, { hint: `${hint}; \`on_no_places: warn\` lets the run finish with nothing loaded` });
  ctx.log.warn(`${what}: NO reviews will be loaded. Fix: ${hint}`);
}

function named(queries: string[]): string {
  const shown = queries.slice(0, NAMED_QUERIES).map((q) => JSON.stringify(q));
  const more = queries.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}

/**
 * The fids on one query's search pages, its pages read one after another as the search pager pages them; and the
 * pages' keys in the ledger of paid work.
 */
async function searchQuery(
  query: string,
  opts: PlacesFromSearchOptions,
  ctx: SourceContext,
): Promise<{ fids: string[]; pages: string[] }> {
  const found: string[] = [];
  const purpose = `from_serp ${opts.search.purpose}`;
  const pages: string[] = [];
  for (let at: PagePosition = { subject: query, start: 0, page: 1 }; ;) {
    const key = `from_serp:${opts.search.unitId(at)}`;
    pages.push(key);
    const res = await opts.fetch(opts.search.url(at), ctx, { for: purpose, key });
    const payload = pagePayload(res.payload, opts.search.chainKey(query));
    const wrong = await opts.search.wrongPage?.(payload, at, ctx);
    if (wrong !== undefined) {
      await ctx.paid.wasted({ kind: 'request', for: purpose });
      ctx.log.warn(`from_serp "${query}": ${wrong}; the query's later pages are not searched`);
      break;
    }
    found.push(...placeFids(payload));
    const outcome = await opts.search.next(payload, at, opts.maxPages, ctx);
    if ('stop' in outcome) break;
    at = { subject: query, start: outcome.next, page: at.page + 1 };
  }
  return { fids: [...new Set(found)], pages };
}
