/**
 * Search result pages through `POST /request`: each page of each query is one work unit. Page 1 of every query is
 * planned; each further page is discovered from the page before it (`pagination.next_page_start`, else `start=` of
 * `next_page_link`) until the last page, an empty page, or `max_pages`. Discovered pages are checkpointed (see
 * crawl/shared.ts), so a resumed run plans exactly the pages it has not committed.
 *
 * Each unit yields one row: the page payload as the service returned it, plus `fetched_at` (also in the unit's
 * params, where normalizers such as `serp_organic` read query, page, start and fetch time).
 */
import { z } from 'zod';
import type { Batch, ComponentDef, ComponentDeps, Source, SourceContext, WorkUnit } from '../core/types.js';
import { CrawlFetcher } from './crawl/fetcher.js';
import {
  engineHost,
  nextSerpPage,
  readQueriesFile,
  serpChainKey,
  serpUnitId,
  uniqueQueries,
  type PageOutcome,
} from './crawl/pager.js';
import { parseRate } from './crawl/rate-limit.js';
import { ChainStore, crawlFields, extraParamsField, pagePayload, targetUrl } from './crawl/shared.js';

export const SERP_STATE_KEY = 'serp:discovered';

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

/** A page of one query; `fetched_at` is set when the page is read. */
export interface SerpUnitParams {
  query: string;
  start: number;
  page: number;
  engine: string;
  shard_key: string;
  fetched_at?: string;
  [k: string]: unknown;
}

class SerpSource implements Source {
  private readonly host: string;
  private fetcher: CrawlFetcher | undefined;
  private chains: ChainStore | undefined;
  /** Successors found by `read` in this run, for `discover` (null = the query ended at this page). */
  private readonly next = new Map<string, WorkUnit | null>();

  constructor(
    private readonly cfg: SerpConfig,
    private readonly deps: ComponentDeps,
  ) {
    this.host = engineHost(cfg.engine);
    if (cfg.rate_limit !== undefined) parseRate(cfg.rate_limit);
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    const queries = uniqueQueries(
      this.cfg.queries ?? (await readQueriesFile(this.cfg.queries_file!, ctx.baseDir || this.deps.baseDir)),
    );
    const chains = this.chainStore(ctx);
    const units: WorkUnit[] = [];
    for (const query of queries) {
      const starts = chains.starts(serpChainKey(this.host, query)).slice(0, this.cfg.max_pages);
      starts.forEach((start, i) => units.push(this.unit(query, start, i + 1)));
    }
    if (ctx.dryRun) {
      for (const u of units) ctx.report?.('request', `POST /request ${this.url(u.params as SerpUnitParams)}`);
      ctx.report?.(
        'note',
        `${queries.length} queries; further pages are discovered while crawling, up to ${this.cfg.max_pages} pages per query`,
      );
    }
    return units;
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
    const p = unit.params as SerpUnitParams;
    const res = await this.fetch(ctx).page(this.url(p), ctx);
    const payload = pagePayload(res.payload, unit.id);
    p.fetched_at = res.fetchedAt.toISOString();
    const outcome = nextSerpPage(payload, p.start, p.page, this.cfg.max_pages);
    // Checkpoint the successor before the page's records can commit.
    this.next.set(unit.id, await this.successor(ctx, p, outcome));
    yield [{ ...payload, fetched_at: p.fetched_at }];
  }

  discover(unit: WorkUnit, ctx: SourceContext): WorkUnit[] {
    const p = unit.params as SerpUnitParams;
    let next = this.next.get(unit.id);
    if (next === undefined) {
      // Not read in this run (committed earlier): the checkpointed chain knows its successor.
      const start = this.chainStore(ctx).nextOf(serpChainKey(this.host, p.query), p.start);
      next = start !== undefined && p.page < this.cfg.max_pages ? this.unit(p.query, start, p.page + 1) : null;
    }
    return next ? [next] : [];
  }

  private async successor(ctx: SourceContext, p: SerpUnitParams, outcome: PageOutcome): Promise<WorkUnit | null> {
    const chain = serpChainKey(this.host, p.query);
    if ('stop' in outcome) {
      ctx.log.debug(`serp "${p.query}": ${outcome.stop.replace('_', ' ')} at page ${p.page} (start ${p.start})`);
      // A successor recorded by an earlier read stays planned; following it keeps the chain whole.
      const known = this.chainStore(ctx).nextOf(chain, p.start);
      return known !== undefined && p.page < this.cfg.max_pages ? this.unit(p.query, known, p.page + 1) : null;
    }
    const start = await this.chainStore(ctx).recordNext(chain, p.start, outcome.next);
    return this.unit(p.query, start, p.page + 1);
  }

  private unit(query: string, start: number, page: number): WorkUnit {
    const params: SerpUnitParams = { query, start, page, engine: this.cfg.engine, shard_key: query };
    return { id: serpUnitId(this.host, query, start), params };
  }

  private url(p: SerpUnitParams): string {
    return targetUrl(this.cfg.engine, '/search', [
      ['q', p.query],
      ['start', p.start],
      ...Object.entries(this.cfg.params),
    ]);
  }

  private chainStore(ctx: SourceContext): ChainStore {
    this.chains ??= new ChainStore(ctx.state, SERP_STATE_KEY);
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

export const serpSource: ComponentDef<'source', SerpConfig, Source> = {
  kind: 'source',
  type: 'serp',
  description:
    'Search result pages through POST /request: one unit per page, pages followed through the results’ pagination.',
  schema: serpSchema as unknown as z.ZodType<SerpConfig>,
  create: (cfg, deps) => new SerpSource(cfg, deps),
};
