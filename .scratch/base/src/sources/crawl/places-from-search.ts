/**
 * `reviews.from_serp`: the places whose reviews are crawled, found on search pages. The search pages of the given
 * queries are fetched inside `plan` (through the crawl's rate limiter), one query's pages after another; the place
 * ids (`fid`) they carry — a web page's knowledge panel, every result of a map search page, a place page's own
 * (search-pages.ts `placeFids`) — de-duplicated, in query order, are the places. The fids found for each query are
 * checkpointed once that query's pages are done, so a rerun does not fetch them again. In a dry run nothing is
 * fetched: the search requests are reported and only checkpointed fids are returned.
 *
 * Queries that found no place are named in a warning; when no query found one, the run would load nothing, which
 * is said loudly, or (`on_no_places: fail`) fails the plan before any review page is requested.
 */
import { SluiceError } from '../../core/errors.js';
import type { SourceContext } from '../../core/types.js';
import { FID_PATTERN } from './review-pages.js';
import { pagePayload, type Pager } from './pager.js';
import { placeFids } from './search-pages.js';
import type { PageFetch } from './source.js';

/** fids found per SERP chain key. */
export const REVIEWS_SERP_FIDS_KEY = 'reviews:serp_fids';

export interface PlacesFromSearchOptions {
  queries: string[];
  /** The search pager (its engine, vertical and extra params). */
  search: Pager;
  /** SERP pages per query read at most. */
  maxPages: number;
  fetch: PageFetch;
  /** What a search that finds no place at all does: warn and load nothing (default), or fail the plan. */
  onNoPlaces?: 'warn' | 'fail';
}

/** Queries named in a warning at most; the rest are counted. */
const NAMED_QUERIES = 10;

export async function placesFromSearch(opts: PlacesFromSearchOptions, ctx: SourceContext): Promise<string[]> {
  const { queries, search } = opts;
  const known = { ...(ctx.state.get<Record<string, string[]>>(REVIEWS_SERP_FIDS_KEY) ?? {}) };
  const missing = queries.filter((q) => known[search.chainKey(q)] === undefined);
  if (ctx.dryRun) {
    for (const q of missing)
      ctx.report?.(
        'request',
        `POST /request ${search.url({ subject: q, start: 0, page: 1 })} (search page read for place ids)`,
      );
    if (missing.length > 0)
      ctx.report?.(
        'note',
        `the review pages of the places found by ${missing.length} search queries are planned when the run fetches them`,
      );
  } else if (missing.length > 0) {
    // A failed query fails the plan; queries that finished stay checkpointed for the rerun.
    let saving = Promise.resolve();
    await Promise.all(
      missing.map(async (q) => {
        known[search.chainKey(q)] = await fidsOfQuery(q, opts, ctx);
        saving = saving.then(() => ctx.state.set(REVIEWS_SERP_FIDS_KEY, { ...known }));
        await saving;
      }),
    );
  }
  const fids: string[] = [];
  const searched: string[] = [];
  const placeless: string[] = [];
  for (const q of queries) {
    const found = known[search.chainKey(q)];
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

/** The fids on one query's search pages, its pages read one after another as the search pager pages them. */
async function fidsOfQuery(query: string, opts: PlacesFromSearchOptions, ctx: SourceContext): Promise<string[]> {
  const found: string[] = [];
  for (let at = { subject: query, start: 0, page: 1 }; ;) {
    const res = await opts.fetch(opts.search.url(at), ctx);
    const payload = pagePayload(res.payload, opts.search.chainKey(query));
    const wrong = opts.search.wrongPage?.(payload, at);
    if (wrong !== undefined) {
      ctx.log.warn(`from_serp "${query}": ${wrong}; the query's later pages are not searched`);
      break;
    }
    found.push(...placeFids(payload));
    const outcome = await opts.search.next(payload, at, opts.maxPages, ctx);
    if ('stop' in outcome) break;
    at = { subject: query, start: outcome.next, page: at.page + 1 };
  }
  return [...new Set(found)];
}
