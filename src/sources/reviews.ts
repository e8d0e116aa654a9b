/**
 * Reviews of places through `POST /request`: each page of each place (fid) is one work unit.
 *
 * Review pages carry no pagination block (api-facts §5.4): the next page starts at this page's offset plus the
 * reviews it held, and a place ends at an empty page, at `max_pages`, or at a page shorter than its first page (the
 * first page shows the service's page size for that place; a shorter one is the last). Discovered pages are
 * checkpointed like SERP pages (crawl/shared.ts).
 *
 * `from_serp` chains the crawls: the SERP pages of the given queries are fetched inside `plan` (through the same rate
 * limiter), their `knowledge.fid` values — de-duplicated, in query order — are the places to crawl. The fids found
 * for each query are checkpointed once that query's pages are done, so a rerun does not fetch them again. In a dry
 * run nothing is fetched: the SERP requests are reported and only checkpointed fids are planned.
 */
import { z } from 'zod';
import type { Batch, ComponentDef, ComponentDeps, Source, SourceContext, WorkUnit } from '../core/types.js';
import { CrawlFetcher } from './crawl/fetcher.js';
import {
  FID_PATTERN,
  engineHost,
  knowledgeFids,
  nextReviewsPage,
  nextSerpPage,
  readQueriesFile,
  reviewCount,
  reviewsUnitId,
  serpChainKey,
  uniqueQueries,
} from './crawl/pager.js';
import { parseRate } from './crawl/rate-limit.js';
import { ChainStore, crawlFields, extraParamsField, pagePayload, targetUrl } from './crawl/shared.js';

export const REVIEWS_STATE_KEY = 'reviews:discovered';
export const REVIEWS_FIRST_SIZE_KEY = 'reviews:first_page_size';
export const REVIEWS_SERP_FIDS_KEY = 'reviews:serp_fids';

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

export interface ReviewsUnitParams {
  fid: string;
  start: number;
  page: number;
  engine: string;
  shard_key: string;
  fetched_at?: string;
  [k: string]: unknown;
}

class ReviewsSource implements Source {
  private readonly host: string;
  private fetcher: CrawlFetcher | undefined;
  private chains: ChainStore | undefined;
  private readonly next = new Map<string, WorkUnit | null>();

  constructor(
    private readonly cfg: ReviewsConfig,
    private readonly deps: ComponentDeps,
  ) {
    this.host = engineHost(cfg.engine);
    if (cfg.rate_limit !== undefined) parseRate(cfg.rate_limit);
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    const fids = this.cfg.fids ? [...new Set(this.cfg.fids)] : await this.fidsFromSerp(ctx);
    const chains = this.chainStore(ctx);
    const units: WorkUnit[] = [];
    for (const fid of fids) {
      const starts = chains.starts(fid).slice(0, this.cfg.max_pages);
      starts.forEach((start, i) => units.push(this.unit(fid, start, i + 1)));
    }
    if (ctx.dryRun) {
      for (const u of units) ctx.report?.('request', `POST /request ${this.url(u.params as ReviewsUnitParams)}`);
      ctx.report?.(
        'note',
        `${fids.length} places; further review pages are discovered while crawling, up to ${this.cfg.max_pages} per place`,
      );
    }
    return units;
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
    const p = unit.params as ReviewsUnitParams;
    const res = await this.fetch(ctx).page(this.url(p), ctx);
    const payload = pagePayload(res.payload, unit.id);
    p.fetched_at = res.fetchedAt.toISOString();
    const n = reviewCount(payload);
    const sizes = { ...(ctx.state.get<Record<string, number>>(REVIEWS_FIRST_SIZE_KEY) ?? {}) };
    if (p.page === 1 && n > 0 && sizes[p.fid] === undefined) {
      sizes[p.fid] = n;
      await ctx.state.set(REVIEWS_FIRST_SIZE_KEY, sizes);
    }
    const outcome = nextReviewsPage(n, p.start, p.page, this.cfg.max_pages, sizes[p.fid]);
    let next: WorkUnit | null = null;
    if ('next' in outcome) {
      // Checkpoint the successor before the page's records can commit.
      const start = await this.chainStore(ctx).recordNext(p.fid, p.start, outcome.next);
      next = this.unit(p.fid, start, p.page + 1);
    } else {
      ctx.log.debug(`reviews ${p.fid}: ${outcome.stop.replace('_', ' ')} at page ${p.page} (start ${p.start})`);
      const known = this.chainStore(ctx).nextOf(p.fid, p.start);
      if (known !== undefined && p.page < this.cfg.max_pages) next = this.unit(p.fid, known, p.page + 1);
    }
    this.next.set(unit.id, next);
    yield [{ ...payload, fid: p.fid, fetched_at: p.fetched_at }];
  }

  discover(unit: WorkUnit, ctx: SourceContext): WorkUnit[] {
    const p = unit.params as ReviewsUnitParams;
    let next = this.next.get(unit.id);
    if (next === undefined) {
      const start = this.chainStore(ctx).nextOf(p.fid, p.start);
      next = start !== undefined && p.page < this.cfg.max_pages ? this.unit(p.fid, start, p.page + 1) : null;
    }
    return next ? [next] : [];
  }

  /** The places named by the SERP pages of `from_serp`, fetching only the queries not checkpointed yet. */
  private async fidsFromSerp(ctx: SourceContext): Promise<string[]> {
    const fs = this.cfg.from_serp!;
    const queries = uniqueQueries(
      fs.queries ?? (await readQueriesFile(fs.queries_file!, ctx.baseDir || this.deps.baseDir)),
    );
    const known = { ...(ctx.state.get<Record<string, string[]>>(REVIEWS_SERP_FIDS_KEY) ?? {}) };
    const missing = queries.filter((q) => known[serpChainKey(this.host, q)] === undefined);
    if (ctx.dryRun) {
      for (const q of missing)
        ctx.report?.('request', `POST /request ${this.serpUrl(q, 0)} (SERP page read for knowledge.fid)`);
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
          known[serpChainKey(this.host, q)] = await this.searchFids(q, ctx);
          saving = saving.then(() => ctx.state.set(REVIEWS_SERP_FIDS_KEY, { ...known }));
          await saving;
        }),
      );
    }
    const fids: string[] = [];
    for (const q of queries) fids.push(...(known[serpChainKey(this.host, q)] ?? []));
    const unique = [...new Set(fids)];
    const valid = unique.filter((f) => FID_PATTERN.test(f));
    for (const f of unique) if (!FID_PATTERN.test(f)) ctx.log.warn(`ignoring knowledge.fid "${f}": not a 0x…:0x… id`);
    ctx.log.info(`from_serp: ${valid.length} places from ${queries.length} queries`);
    return valid;
  }

  private async searchFids(query: string, ctx: SourceContext): Promise<string[]> {
    const maxPages = this.cfg.from_serp!.max_pages;
    const found: string[] = [];
    for (let start = 0, page = 1; ; page++) {
      const res = await this.fetch(ctx).page(this.serpUrl(query, start), ctx);
      const payload = pagePayload(res.payload, serpChainKey(this.host, query));
      found.push(...knowledgeFids(payload));
      const outcome = nextSerpPage(payload, start, page, maxPages);
      if ('stop' in outcome) break;
      start = outcome.next;
    }
    return [...new Set(found)];
  }

  private unit(fid: string, start: number, page: number): WorkUnit {
    const params: ReviewsUnitParams = { fid, start, page, engine: this.cfg.engine, shard_key: fid };
    return { id: reviewsUnitId(fid, start), params };
  }

  private url(p: ReviewsUnitParams): string {
    return targetUrl(this.cfg.engine, '/reviews', [
      ['fid', p.fid],
      ['start', p.start],
      ...(this.cfg.sort !== undefined ? ([['sort', this.cfg.sort]] as [string, string][]) : []),
      ...(this.cfg.hl !== undefined ? ([['hl', this.cfg.hl]] as [string, string][]) : []),
    ]);
  }

  private serpUrl(query: string, start: number): string {
    return targetUrl(this.cfg.engine, '/search', [
      ['q', query],
      ['start', start],
      ...Object.entries(this.cfg.from_serp?.params ?? {}),
    ]);
  }

  private chainStore(ctx: SourceContext): ChainStore {
    this.chains ??= new ChainStore(ctx.state, REVIEWS_STATE_KEY);
    return this.chains;
  }

  private fetch(ctx: SourceContext): CrawlFetcher {
    this.fetcher ??= new CrawlFetcher({
      client: () => this.deps.client(),
      zone: this.cfg.zone,
      format: this.cfg.format,
      concurrency: this.cfg.concurrency,
      ...(this.cfg.rate_limit !== undefined && { perSecond: parseRate(this.cfg.rate_limit) }),
      log: ctx.log,
    });
    return this.fetcher;
  }
}

export const reviewsSource: ComponentDef<'source', ReviewsConfig, Source> = {
  kind: 'source',
  type: 'reviews',
  description:
    'Place reviews through POST /request: one unit per page, places given as fids or found by a SERP crawl (from_serp).',
  schema: reviewsSchema as unknown as z.ZodType<ReviewsConfig>,
  create: (cfg, deps) => new ReviewsSource(cfg, deps),
};
