/**
 * `reviews`: reviews of places through `POST /request`, each page of each place (fid) one work unit, crawled by
 * the one crawl source (crawl/source.ts) with the review pager (crawl/review-pages.ts: no pagination block, the
 * next page starts after the reviews this page held).
 *
 * `from_serp` chains the crawls: the places are the place ids (`knowledge.fid` of web result pages, `organic[].fid`
 * of map search pages) on the search pages of the given queries, read inside `plan` through the same rate limiter
 * and kept across runs for `from_serp.refresh_after` (crawl/places-from-search.ts), so a night pays for the searches
 * only when they are due.
 *
 * `max_pages` defaults to 1: the service is known to answer a later review page with the place's first page again
 * (docs/service.md §5.4), a paid request for nothing per place.
 */
import { z } from 'zod';
import type { Source } from '../core/types.js';
import { fileReferences, type ComponentDef } from '../contracts/component.js';
import { reviewsBackfill } from './crawl/backfill.js';
import { crawlFields, extraParamsField, refreshMs, refreshPeriod } from './crawl/config.js';
import { placesFromSearch } from './crawl/places-from-search.js';
import { configuredQueries } from './crawl/queries.js';
import { FID_PATTERN, reviewPages, reviewsIncremental, reviewsPlanNote } from './crawl/review-pages.js';
import { searchPages } from './crawl/search-pages.js';
import { crawlSource } from './crawl/source.js';

const fidSchema = z.string().regex(FID_PATTERN, 'a fid looks like 0x89c259a9b3117469:0xd134e199a405a163');

const fromSerpSchema = z
  .object({
    queries: z.array(z.string().min(1)).min(1).optional().describe('Search queries whose result pages name places.'),
    queries_file: z
      .string()
      .min(1)
      .optional()
      .describe('File of queries, relative to the pipeline file: a CSV with a `query` column, or one query per line.'),
    search: z
      .enum(['web', 'maps'])
      .default('web')
      .describe(
        '`web`: web result pages, whose knowledge panel names a place (`knowledge.fid`); `maps`: map search pages (`{engine}/maps/search/<query>/`), one place per result (`organic[].fid`), one page per query.',
      ),
    max_pages: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(1)
      .describe('Web result pages per query searched for place ids (the knowledge panel is on page 1).'),
    refresh_after: refreshPeriod
      .default('7d')
      .describe(
        'How long the places a search found are used before it is made again: each search is paid, and places change slowly while their reviews are what is new each night. "0m": search every run. A run that starts over (--fresh, --reset-cursor) searches again.',
      ),
    on_no_places: z
      .enum(['warn', 'fail'])
      .default('warn')
      .describe(
        'When no query finds any place: `warn` (a loud warning; the run loads nothing and succeeds) or `fail` (the run fails before any review page is requested).',
      ),
    params: extraParamsField,
  })
  .strict()
  .refine((c) => (c.queries === undefined) !== (c.queries_file === undefined), {
    error: 'set exactly one of `from_serp.queries` or `from_serp.queries_file`',
  });

export const reviewsSchema = z
  .object({
    type: z.literal('reviews'),
    ...crawlFields,
    fids: z.array(fidSchema).min(1).optional().describe('Feature ids of the places whose reviews are crawled.'),
    from_serp: fromSerpSchema
      .optional()
      .describe(
        'Find the places with a search first: the place ids (`fid`) on the result pages of the queries (`knowledge.fid`, `organic[].fid`).',
      ),
    max_pages: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(1)
      .describe(
        'Review pages per place at most. The service is known to answer every later page with the place’s first page again (docs/service.md §5.4): each such page is paid for nothing, so the default reads the first page only. Raise it for a service that pages reviews by `start`.',
      ),
    sort: z
      .enum(['qualityScore', 'newestFirst', 'ratingHigh', 'ratingLow'])
      .optional()
      .describe('Review order (the service defaults to qualityScore, most relevant first).'),
    hl: z.string().min(2).optional().describe('Language of the review pages, e.g. en.'),
    incremental: z
      .boolean()
      .default(false)
      .describe(
        'With `sort: newestFirst`: stop paging a place at the first page that reaches reviews loaded before; that page keeps only the new ones.',
      ),
  })
  .strict()
  .refine((c) => (c.fids === undefined) !== (c.from_serp === undefined), {
    error: 'set exactly one of `fids` or `from_serp`',
  })
  .refine((c) => !c.incremental || c.sort === 'newestFirst', {
    error: '`incremental: true` needs `sort: newestFirst` (only then are new reviews on the first pages)',
    path: ['sort'],
  });

export type ReviewsConfig = z.infer<typeof reviewsSchema>;

export const reviewsSource: ComponentDef<'source', ReviewsConfig, Source> = {
  kind: 'source',
  type: 'reviews',
  description:
    'Place reviews through POST /request: one unit per page, places given as fids or found by a SERP crawl (from_serp).',
  schema: reviewsSchema as unknown as z.ZodType<ReviewsConfig>,
  create: (cfg, deps) =>
    crawlSource(
      {
        pager: reviewPages({ engine: cfg.engine, sort: cfg.sort, hl: cfg.hl }),
        crawl: cfg,
        maxPages: cfg.max_pages,
        subjects: async (ctx, fetch) => {
          if (cfg.fids) return [...new Set(cfg.fids)];
          const fs = cfg.from_serp!;
          const queries = await configuredQueries(fs, ctx.baseDir || deps.baseDir);
          const search = searchPages({ engine: cfg.engine, params: fs.params, vertical: fs.search });
          return placesFromSearch(
            {
              queries,
              search,
              maxPages: fs.max_pages,
              fetch,
              onNoPlaces: fs.on_no_places,
              refreshAfterMs: refreshMs(fs.refresh_after),
              refreshAfter: fs.refresh_after,
            },
            ctx,
          );
        },
        note: (places) => reviewsPlanNote(places, cfg.max_pages),
        ...(cfg.incremental && { incremental: reviewsIncremental(cfg.max_pages) }),
      },
      deps,
    ),
  backfill: reviewsBackfill,
  files: (cfg) =>
    fileReferences(
      ['from_serp', 'queries_file'],
      cfg.from_serp?.queries_file,
      'file',
      'the queries whose places are read',
    ),
};
