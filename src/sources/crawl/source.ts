/**
 * The one crawl source: pages of chains (one chain per query, per place) through `POST /request`, each page one work
 * unit, paged by a strategy (pager.ts). The first page of every chain is planned; each further page is discovered
 * from the page before it until the strategy says the chain ends or `max_pages` is reached. Discovered pages are
 * checkpointed (chains.ts), so a resumed run plans exactly the pages it has not committed.
 *
 * A unit's params are its position (`<subject param>`, `start`, `page`), `engine` and `shard_key` (the subject, so
 * a chain stays on one shard); `read` never changes them. Each page yields one row, which carries `fetched_at`.
 *
 * An incremental crawl (`CrawlIncremental`) also keeps a checkpoint per page, committed with the page's row: it may
 * drop subjects at plan (SERP queries fetched recently), and end a chain early at a page whose items were loaded
 * before (reviews newest first), keeping only the new items on that page's row.
 */
import type { Batch, Source, SourceContext, UnitEnd, WorkUnit } from '../../core/types.js';
import type { ComponentDeps } from '../../contracts/component.js';
import { ChainStore } from './chains.js';
import type { CrawlConfig } from './config.js';
import { CrawlFetcher, type FetchedPage, type PageCall } from './fetcher.js';
import { pagePayload, type PageOutcome, type PagePosition, type Pager } from './pager.js';
import { parseRate } from './rate-limit.js';
import { checkSearchZone } from '../preflight.js';

/** Fetches one page under the crawl's concurrency and rate limiter, recording it in the ledger as `call` says. */
export type PageFetch = (url: string, ctx: SourceContext, call: PageCall) => Promise<FetchedPage>;

export interface CrawlSourceOptions {
  pager: Pager;
  crawl: CrawlConfig;
  /** Pages per chain at most. */
  maxPages: number;
  /**
   * The chains' subjects in crawl order (queries, fids). May fetch pages through `fetch`, which shares the crawl's
   * limits (reviews' `from_serp` reads SERP pages here); must not in a dry run.
   */
  subjects(ctx: SourceContext, fetch: PageFetch): Promise<string[]>;
  /** Dry runs: what the plan leaves to discovery, given the number of subjects. */
  note(subjects: number): string;
  /** Present when the crawl loads incrementally (pages carry checkpoints). */
  incremental?: CrawlIncremental;
}

/** How an incremental crawl uses what earlier runs committed (`ctx.checkpoints`, each page's checkpoint). */
export interface CrawlIncremental {
  /** The subjects this run crawls, of all configured; told what earlier runs committed. */
  plan(subjects: string[], ctx: SourceContext): string[] | Promise<string[]>;
  /**
   * A fetched page: the payload its row carries (new items only), whether its chain ends here (it reached what was
   * loaded before), and the page's checkpoint.
   */
  page(payload: Record<string, unknown>, at: PagePosition, fetchedAt: Date): IncrementalPage;
  /** Called once the crawl is over (the source closes): a line for the run's log, if any. */
  summary?(): string | undefined;
}

export interface IncrementalPage {
  payload: Record<string, unknown>;
  stop: boolean;
  checkpoint: unknown;
  /** Something the run should be told about the page (a value not taken as the cursor). */
  warning?: string;
}

class CrawlSource implements Source {
  readonly concurrency: number;
  readonly incremental: boolean;
  private readonly pager: Pager;
  private fetcher: CrawlFetcher | undefined;
  private chains: ChainStore | undefined;
  /** Pages answered but not loaded (not the page asked for, or one already answered): billed for nothing. */
  private wrongPages = 0;

  constructor(
    private readonly opts: CrawlSourceOptions,
    private readonly deps: ComponentDeps,
  ) {
    this.pager = opts.pager;
    this.concurrency = opts.crawl.concurrency;
    this.incremental = opts.incremental !== undefined;
    if (opts.crawl.rate_limit !== undefined) parseRate(opts.crawl.rate_limit);
  }

  /** The zone is checked before any page is requested: a typo would otherwise fail every page, each one paid for. */
  async preflight(ctx: SourceContext): Promise<void> {
    await checkSearchZone(await this.deps.client(), this.opts.crawl.zone, ctx.log);
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    const all = await this.opts.subjects(ctx, (url, c, call) => this.fetch(c).page(url, c, call));
    const subjects = (await this.opts.incremental?.plan(all, ctx)) ?? all;
    const chains = this.chainStore(ctx);
    const units: WorkUnit[] = [];
    for (const subject of subjects) {
      const starts = chains.starts(this.pager.chainKey(subject)).slice(0, this.opts.maxPages);
      starts.forEach((start, i) => units.push(this.unit({ subject, start, page: i + 1 })));
    }
    if (ctx.dryRun) {
      for (const u of units) ctx.report?.('request', `POST /request ${this.pager.url(this.position(u))}`);
      ctx.report?.('note', this.opts.note(subjects.length));
    }
    return units;
  }

  /** One page: its row, then the page it leads to and (incremental) its checkpoint. */
  async *read(unit: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd> {
    const at = this.position(unit);
    const res = await this.fetch(ctx).page(this.pager.url(at), ctx, { for: this.pager.purpose, key: unit.id });
    // On the service's clock (the answer's Date): a later run's SERP `refresh_after` compares it with its own
    // `ctx.now`, the same clock, and relative review dates are resolved against it.
    const fetchedAt = res.fetchedAt;
    const payload = pagePayload(res.payload, unit.id);
    const wrong = await this.pager.wrongPage?.(payload, at, ctx);
    if (wrong !== undefined) {
      // Its items would land on the requested page's positions, over another page's (or be loaded twice): end the
      // chain, load nothing. It was billed all the same: for nothing.
      this.wrongPages++;
      await ctx.paid.wasted({ kind: 'request', for: this.pager.purpose });
      ctx.log.warn(`${this.pager.name} "${at.subject}": ${wrong}; its crawl ends here and the page is not loaded`);
      return { next: [] };
    }
    const outcome = await this.pager.next(payload, at, this.opts.maxPages, ctx);
    const inc = this.opts.incremental?.page(payload, at, fetchedAt);
    let next: WorkUnit | null;
    if (inc?.stop) {
      ctx.log.debug(`${this.pager.name} "${at.subject}": reached what was loaded before at page ${at.page}`);
      next = this.recorded(ctx, at);
    } else {
      // Checkpoint the successor before the page's records can commit.
      next = await this.successor(ctx, at, outcome);
    }
    if (inc?.warning !== undefined) ctx.log.warn(inc.warning);
    yield [this.pager.row(inc?.payload ?? payload, at, fetchedAt.toISOString())];
    return { next: next ? [next] : [], ...(inc && { checkpoint: inc.checkpoint }) };
  }

  close(): Promise<void> {
    const line = this.opts.incremental?.summary?.();
    if (line !== undefined) this.deps.log.info(line);
    // Every page the service answered is billed (docs/service.md §5.6), loaded or not: the run says how many.
    const billed = this.fetcher?.billed ?? 0;
    if (billed > 0) {
      const wasted =
        this.wrongPages > 0 ? `, ${this.wrongPages} of them answered a page not asked for and not loaded` : '';
      const log = this.wrongPages > 0 ? this.deps.log.warn : this.deps.log.info;
      log.call(this.deps.log, `${this.pager.name}: ${billed} billed page request(s)${wasted}`);
    }
    return Promise.resolve();
  }

  /** A page committed earlier: the checkpointed chain knows its successor. */
  discover(unit: WorkUnit, ctx: SourceContext): WorkUnit[] {
    const next = this.recorded(ctx, this.position(unit));
    return next ? [next] : [];
  }

  private async successor(ctx: SourceContext, at: PagePosition, outcome: PageOutcome): Promise<WorkUnit | null> {
    if ('stop' in outcome) {
      ctx.log.debug(
        `${this.pager.name} "${at.subject}": ${outcome.stop.replace('_', ' ')} at page ${at.page} (start ${at.start})`,
      );
      // A successor recorded by an earlier read stays planned; following it keeps the chain whole.
      return this.recorded(ctx, at);
    }
    const start = await this.chainStore(ctx).recordNext(this.pager.chainKey(at.subject), at.start, outcome.next);
    return this.unit({ subject: at.subject, start, page: at.page + 1 });
  }

  /** The successor the checkpoint holds for `at`, within `max_pages`. */
  private recorded(ctx: SourceContext, at: PagePosition): WorkUnit | null {
    const start = this.chainStore(ctx).nextOf(this.pager.chainKey(at.subject), at.start);
    return start !== undefined && at.page < this.opts.maxPages
      ? this.unit({ subject: at.subject, start, page: at.page + 1 })
      : null;
  }

  private unit(at: PagePosition): WorkUnit {
    const params = {
      [this.pager.subjectParam]: at.subject,
      start: at.start,
      page: at.page,
      engine: this.opts.crawl.engine,
      shard_key: at.subject,
    };
    return { id: this.pager.unitId(at), params };
  }

  private position(unit: WorkUnit): PagePosition {
    const p = unit.params;
    return { subject: String(p[this.pager.subjectParam]), start: Number(p.start), page: Number(p.page) };
  }

  private chainStore(ctx: SourceContext): ChainStore {
    this.chains ??= new ChainStore(ctx.state, this.pager.stateKey);
    return this.chains;
  }

  private fetch(ctx: SourceContext): CrawlFetcher {
    const crawl = this.opts.crawl;
    this.fetcher ??= new CrawlFetcher({
      client: () => this.deps.client(),
      zone: crawl.zone,
      format: crawl.format,
      concurrency: crawl.concurrency,
      // `rate_limit` is the pipeline's: the shards behind one address each take their part of it.
      ...(crawl.rate_limit !== undefined && { perSecond: parseRate(crawl.rate_limit) / (this.deps.shard?.count ?? 1) }),
      log: ctx.log,
    });
    return this.fetcher;
  }
}

export function crawlSource(opts: CrawlSourceOptions, deps: ComponentDeps): Source {
  return new CrawlSource(opts, deps);
}
