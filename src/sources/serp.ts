/**
 * `serp`: search result pages through `POST /request`, each page of each query one work unit, crawled by the one
 * crawl source (crawl/source.ts) with the search pager (crawl/search-pages.ts): page 1 of every query is planned,
 * each further page is discovered from the page before it (`pagination.next_page_start`, else `start=` of
 * `next_page_link`) until the last page, an empty page, or `max_pages`.
 *
 * Each unit yields one row: the page payload as the service returned it, plus `fetched_at`. Normalizers such as
 * `serp_organic` read query, page and start from the unit's params and the fetch time from the row.
 *
 * `refresh_after` makes the crawl incremental: each page's checkpoint is its query and fetch time, and a run skips
 * the queries whose pages were fetched (and committed) more recently than that.
 */
import { z } from 'zod';
import type { Source, SourceContext } from '../core/types.js';
import { fileReferences, type ComponentDef } from '../contracts/component.js';
import { serpBackfill } from './crawl/backfill.js';
import { crawlFields, extraParamsField, refreshMs, refreshPeriod } from './crawl/config.js';
import { configuredQueries } from './crawl/queries.js';
import { searchPages } from './crawl/search-pages.js';
import { crawlSource, type CrawlIncremental } from './crawl/source.js';

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
    refresh_after: refreshPeriod
      .optional()
      .describe(
        'Skip queries whose pages were fetched and loaded more recently than this ("7d"): a nightly run fetches each query at most once a week.',
      ),
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
        subjects: (ctx) => configuredQueries(cfg, ctx.baseDir || deps.baseDir),
        note: (queries) =>
          `${queries} queries; further pages are discovered while crawling, up to ${cfg.max_pages} pages per query`,
        ...(cfg.refresh_after !== undefined && { incremental: serpRefresh(cfg.refresh_after) }),
      },
      deps,
    ),
  backfill: serpBackfill,
  files: (cfg) => fileReferences(['queries_file'], cfg.queries_file, 'file', 'the queries to search'),
};

/** A SERP page's checkpoint: its query and when it was fetched. */
export interface SerpCheckpoint {
  query: string;
  fetched_at: string;
}

/**
 * `refresh_after`: queries fetched (and committed) more recently than `after` are not crawled this run. "Now" is the
 * run's clock (`ctx.now`), the one the pages' fetch times were taken on.
 */
export function serpRefresh(after: string): CrawlIncremental {
  const ms = refreshMs(after);
  return {
    plan(queries: string[], ctx: SourceContext) {
      const last = new Map<string, string>();
      for (const cp of ctx.checkpoints?.values() ?? []) {
        const c = cp as Partial<SerpCheckpoint> | null;
        if (typeof c?.query !== 'string' || typeof c.fetched_at !== 'string') continue;
        const seen = last.get(c.query);
        if (seen === undefined || c.fetched_at > seen) last.set(c.query, c.fetched_at);
      }
      const now = (ctx.now ?? Date.now)();
      // A backfill (`--from`) refetches now every query last fetched before its date, however recent.
      const refetchBefore = ctx.backfill !== undefined ? Date.parse(String(ctx.backfill.from)) : undefined;
      const due = queries.filter((q) => {
        const at = last.get(q);
        if (at === undefined) return true;
        return refetchBefore !== undefined ? Date.parse(at) < refetchBefore : now - Date.parse(at) >= ms;
      });
      const skipped = queries.length - due.length;
      if (skipped > 0) {
        const line =
          refetchBefore !== undefined
            ? `serp (backfill): ${skipped} of ${queries.length} queries fetched after ${String(ctx.backfill!.from)}: not fetched again`
            : `serp: ${skipped} of ${queries.length} queries fetched less than ${after} ago: not fetched again`;
        ctx.log.info(line);
        ctx.report?.('note', line);
      }
      return due;
    },
    page: (payload, at, fetchedAt) => ({
      payload,
      stop: false,
      checkpoint: { query: at.subject, fetched_at: fetchedAt.toISOString() } satisfies SerpCheckpoint,
    }),
  };
}
