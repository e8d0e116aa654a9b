/**
 * `reviews`: reviews of places through `POST /request`, each page of each place (fid) one work unit, crawled by
 * the one crawl source (crawl/source.ts) with the review pager (crawl/review-pages.ts: no pagination block, the
 * next page starts after the reviews this page held).
 *
 * `from_serp` chains the crawls: the places are the `knowledge.fid` values of the SERP pages of the given queries,
 * read inside `plan` through the same rate limiter (crawl/places-from-search.ts).
 */
import { z } from 'zod';
import type { Source } from '../core/types.js';
import type { ComponentDef } from '../core/component.js';
import { crawlFields, extraParamsField } from './crawl/config.js';
import { placesFromSearch } from './crawl/places-from-search.js';
import { readQueriesFile, uniqueQueries } from './crawl/queries.js';
import { FID_PATTERN, reviewPages } from './crawl/review-pages.js';
import { searchPages } from './crawl/search-pages.js';
import { crawlSource } from './crawl/source.js';

const fidSchema = z.string().regex(FID_PATTERN, 'a fid looks like 0x89c259a9b3117469:0xd134e199a405a163');

const fromSerpSchema = z
  .object({
    queries: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Search queries whose knowledge panels name places.'),
    queries_file: z
      .string()
      .min(1)
      .optional()
      .describe('File of queries, relative to the pipeline file: a CSV with a `query` column, or one query per line.'),
    max_pages: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(1)
      .describe('SERP pages per query searched for `knowledge.fid` (the knowledge panel is on page 1).'),
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
      .describe("Find the places with a SERP crawl first: each result page's `knowledge.fid`."),
    max_pages: z.number().int().min(1).max(1000).default(10).describe('Review pages per place at most.'),
    sort: z
      .enum(['qualityScore', 'newestFirst', 'ratingHigh', 'ratingLow'])
      .optional()
      .describe('Review order (the service defaults to qualityScore, most relevant first).'),
    hl: z.string().min(2).optional().describe('Language of the review pages, e.g. en.'),
  })
  .strict()
  .refine((c) => (c.fids === undefined) !== (c.from_serp === undefined), {
    error: 'set exactly one of `fids` or `from_serp`',
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
          const queries = uniqueQueries(
            fs.queries ?? (await readQueriesFile(fs.queries_file!, ctx.baseDir || deps.baseDir)),
          );
          const search = searchPages({ engine: cfg.engine, params: fs.params });
          return placesFromSearch({ queries, search, maxPages: fs.max_pages, fetch }, ctx);
        },
        note: (places) =>
          `${places} places; further review pages are discovered while crawling, up to ${cfg.max_pages} per place`,
      },
      deps,
    ),
};
