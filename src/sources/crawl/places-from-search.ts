/**
 * `reviews.from_serp`: the places whose reviews are crawled, found on search pages. The SERP pages of the given
 * queries are fetched inside `plan` (through the crawl's rate limiter), one query's pages after another; their
 * `knowledge.fid` values — de-duplicated, in query order — are the places. The fids found for each query are
 * checkpointed once that query's pages are done, so a rerun does not fetch them again. In a dry run nothing is
 * fetched: the SERP requests are reported and only checkpointed fids are returned.
 */
import type { SourceContext } from '../../core/types.js';
import { FID_PATTERN } from './review-pages.js';
import { pagePayload, type Pager } from './pager.js';
import { knowledgeFids } from './search-pages.js';
import type { PageFetch } from './source.js';

/** fids found per SERP chain key. */
export const REVIEWS_SERP_FIDS_KEY = 'reviews:serp_fids';

export interface PlacesFromSearchOptions {
  queries: string[];
  /** The search pager (its engine and extra params). */
  search: Pager;
  /** SERP pages per query read at most. */
  maxPages: number;
  fetch: PageFetch;
}

export async function placesFromSearch(opts: PlacesFromSearchOptions, ctx: SourceContext): Promise<string[]> {
  const { queries, search } = opts;
  const known = { ...(ctx.state.get<Record<string, string[]>>(REVIEWS_SERP_FIDS_KEY) ?? {}) };
  const missing = queries.filter((q) => known[search.chainKey(q)] === undefined);
  if (ctx.dryRun) {
    for (const q of missing)
      ctx.report?.(
        'request',
        `POST /request ${search.url({ subject: q, start: 0, page: 1 })} (SERP page read for knowledge.fid)`,
      );
    if (missing.length > 0)
      ctx.report?.(
        'note',
        `the review pages of the places found by ${missing.length} SERP queries are planned when the run fetches them`,
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
  for (const q of queries) fids.push(...(known[search.chainKey(q)] ?? []));
  const unique = [...new Set(fids)];
  const valid = unique.filter((f) => FID_PATTERN.test(f));
  for (const f of unique) if (!FID_PATTERN.test(f)) ctx.log.warn(`ignoring knowledge.fid "${f}": not a 0x…:0x… id`);
  ctx.log.info(`from_serp: ${valid.length} places from ${queries.length} queries`);
  return valid;
}

/** The fids on one query's SERP pages, its pages read one after another as the search pager pages them. */
async function fidsOfQuery(query: string, opts: PlacesFromSearchOptions, ctx: SourceContext): Promise<string[]> {
  const found: string[] = [];
  for (let at = { subject: query, start: 0, page: 1 }; ;) {
    const res = await opts.fetch(opts.search.url(at), ctx);
    const payload = pagePayload(res.payload, opts.search.chainKey(query));
    found.push(...knowledgeFids(payload));
    const outcome = await opts.search.next(payload, at, opts.maxPages, ctx);
    if ('stop' in outcome) break;
    at = { subject: query, start: outcome.next, page: at.page + 1 };
  }
  return [...new Set(found)];
}
