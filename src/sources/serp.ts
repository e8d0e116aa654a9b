/**
 * `serp`: search result pages through `POST /request`, each page of each query one work unit, crawled by the one
 * crawl source (crawl/source.ts) with the search pager (crawl/search-pages.ts): page 1 of every query is planned,
 * each further page is discovered from the page before it (`pagination.next_page_start`, else `start=` of
 * `next_page_link`) until the last page, an empty page, or `max_pages`.
 *
 * Each unit yields one row: the page payload as the service returned it, plus `fetched_at`. Normalizers such as
 * `serp_organic` read query, page and start from the unit's params and the fetch time from the row.
 */
import { z } from 'zod';
import type { Source } from '../core/types.js';
import type { ComponentDef } from '../core/component.js';
import { crawlFields, extraParamsField } from './crawl/config.js';
import { readQueriesFile, uniqueQueries } from './crawl/queries.js';
import { searchPages } from './crawl/search-pages.js';
import { crawlSource } from './crawl/source.js';

export const serpSchema = z
  .object({
    type: z.literal('serp'),
    ...crawlFields,
    queries: z.array(z.string().min(1)).min(1).optional().describe('Search queries to crawl.'),
    queries_file: z
      .string()
      .min(1)
      .optional()
      .describe('File of queries, relative to the pipeline file: a CSV with a `query` column, or one query per line.'),
    max_pages: z.number().int().min(1).max(100).default(5).describe('Pages per query at most.'),
    params: extraParamsField,
  })
  .strict()
  .refine((c) => (c.queries === undefined) !== (c.queries_file === undefined), {
    error: 'set exactly one of `queries` or `queries_file`',
  });

export type SerpConfig = z.infer<typeof serpSchema>;

export const serpSource: ComponentDef<'source', SerpConfig, Source> = {
  kind: 'source',
  type: 'serp',
  description:
    'Search result pages through POST /request: one unit per page, pages followed through the results’ pagination.',
  schema: serpSchema as unknown as z.ZodType<SerpConfig>,
  create: (cfg, deps) =>
    crawlSource(
      {
        pager: searchPages({ engine: cfg.engine, params: cfg.params }),
        crawl: cfg,
        maxPages: cfg.max_pages,
        subjects: async (ctx) =>
          uniqueQueries(cfg.queries ?? (await readQueriesFile(cfg.queries_file!, ctx.baseDir || deps.baseDir))),
        note: (queries) =>
          `${queries} queries; further pages are discovered while crawling, up to ${cfg.max_pages} pages per query`,
      },
      deps,
    ),
};
