/**
 * Every page request of a crawl goes through here: a slot under the crawl's concurrency, a token from its one rate
 * limiter, then `POST /request`.
 *
 * 429s are not retried inside the client: the retry hook tells the rate limiter (which slows the whole crawl down)
 * and cancels the client's own retry, and the page is requested again here, with a new slot and a new token. So
 * retries obey the crawl's rate and its concurrency like any other request (and, as every request of the run does,
 * the client's one 429 budget, which holds every request after a 429 and stops the run before the service's IP
 * block: client/throttle.ts). A 429 is a 429 however the service gave it: outright, or as a 200 whose
 * `x-brd-status-code` says 429 (a zone the service throttles, `sr_rate_limit`; the client reads the real status
 * first). A cancelled retry never reached the service (it was waiting out its backoff), so no page is fetched twice.
 * Other failures (5xx, network) keep the client's own retries.
 *
 * Whether and when to request a page again is the crawl's `RetryPolicy` (core/retry.ts), with the pipeline's retry
 * timing (`service.retry`): the service's Retry-After, else a backoff that grows with each 429 of the same page — a
 * page requested again does not start over from the first wait.
 *
 * A refusal that is about the zone, not the page (an unknown zone, a zone of the wrong type: every page would get
 * it) ends the crawl: the first such answer is kept and every later page fails with it without a request.
 *
 * Every page the service answers is billed (docs/service.md §5.6): it is recorded in the run's ledger of paid work
 * (`ctx.paid`) with what it was for, before the page is handed on. Refusals are not billed, and not recorded.
 */
import { setMaxListeners } from 'node:events';
import { ServiceError, type ServiceClient } from '../../client/index.js';
import { SluiceError } from '../../core/errors.js';
import { RetryPolicy, retrying } from '../../core/retry.js';
import type { Logger, SourceContext } from '../../core/types.js';
import { InFlightLimiter } from '../../core/concurrency.js';
import { RateLimiter, realClock, type LimiterClock } from './rate-limit.js';

/** What a page request is for, as the ledger of paid work counts it. */
export interface PageCall {
  /** The ledger line: `review page`, `from_serp search page`. */
  for: string;
  /** The page within the run (its unit id): billed again before its unit committed, it was paid twice. */
  key: string;
}

export interface FetchedPage {
  payload: unknown;
  bytes: number;
  fetchedAt: Date;
}

export interface CrawlFetcherOptions {
  client: () => Promise<ServiceClient>;
  zone: string;
  format: 'raw' | 'json';
  concurrency: number;
  /** Requests per second for the whole crawl; undefined = no fixed rate (still slows down on 429s). */
  perSecond?: number;
  log: Logger;
  /** Requests of one page answered 429 before the page fails (the engine may then retry the unit). Default 10. */
  max429?: number;
  clock?: LimiterClock;
}

/** Marks the abort of a client retry that this module replaces with its own. */
class RequeueOn429 extends Error {
  constructor() {
    super('429: requesting the page again through the crawl rate limiter');
  }
}

/**
 * The service asked the crawl to slow down. Only this answer goes back through the crawl's rate limiter: a 5xx or
 * a network failure says nothing about the crawl's pace.
 */
function rateLimited(err: unknown): err is ServiceError {
  return err instanceof ServiceError && err.status === 429;
}

/** Codes of refusals that are about the zone (docs/service.md §5.6): every page of the crawl would get them. */
const ZONE_CODES = /^client_(10090|100[0-1]\d)$/;

export class CrawlFetcher {
  readonly rate: RateLimiter;
  readonly slots: InFlightLimiter;
  /** Requests of one page, 429s included: `max429` tries, then the page fails (the engine may retry the unit). */
  private readonly max429: number;
  /** The page's retry policy, with the client's retry timing (known once the client is). */
  private requeue: RetryPolicy | undefined;
  private readonly clock: LimiterClock;
  private readonly signals = new WeakMap<AbortSignal, AbortSignal>();
  /** The zone's refusal, once a page got one: every later page fails with it, unsent. */
  private zoneRefused: Error | undefined;
  /** Pages the service answered: each is billed (docs/service.md §5.6), whatever the crawl then does with it. */
  billed = 0;

  constructor(private readonly opts: CrawlFetcherOptions) {
    this.clock = opts.clock ?? realClock;
    this.slots = new InFlightLimiter(opts.concurrency);
    this.max429 = opts.max429 ?? 10;
    this.rate = new RateLimiter({
      ...(opts.perSecond !== undefined && { perSecond: opts.perSecond }),
      clock: this.clock,
    });
  }

  async page(url: string, ctx: SourceContext, call: PageCall): Promise<FetchedPage> {
    const res = await this.request(url, ctx);
    this.billed++;
    await ctx.paid.paid({ kind: 'request', ...call });
    return res;
  }

  private async request(url: string, ctx: SourceContext): Promise<FetchedPage> {
    if (this.zoneRefused) throw this.zoneRefused;
    const client = await this.opts.client();
    const policy = this.policyFor(client);
    const signal = this.crawlSignal(ctx.signal);
    /** The 429 the page is requested again after. */
    let requeued: ServiceError | undefined;
    return retrying(
      async (attempt) => {
        requeued = undefined;
        if (this.zoneRefused) throw this.zoneRefused;
        const release = await this.slots.acquire(signal);
        const call = new AbortController();
        const forward = (): void => call.abort(signal.reason);
        signal.addEventListener('abort', forward, { once: true });
        let refused: ServiceError | undefined;
        try {
          await this.rate.take(signal);
          const res = await client.request.page(
            { zone: this.opts.zone, url, format: this.opts.format },
            {
              signal: call.signal,
              onRetry: ({ error }) => {
                if (!rateLimited(error)) return;
                this.rate.note429();
                if (!this.mayRequeue(attempt, error)) return; // let the client's last retries run
                refused = error;
                call.abort(new RequeueOn429());
              },
            },
          );
          ctx.counters.bytes += res.bytes;
          return res;
        } catch (err) {
          if (signal.aborted) throw err;
          if (refused === undefined) {
            // The client gave up on 429 (or does not retry): count it, and try again ourselves while allowed.
            if (!this.mayRequeue(attempt, err)) throw this.finalFailure(err);
            this.rate.note429();
            ctx.counters.retries++;
            refused = err;
          }
          requeued = refused;
          throw err;
        } finally {
          signal.removeEventListener('abort', forward);
          release();
        }
      },
      {
        policy,
        // Only a 429 is requested again here, after the page's own wait (Retry-After, else a backoff growing with
        // each of its 429s), without holding a slot.
        next: (attempt) => (requeued === undefined ? undefined : policy.delayMs(attempt, requeued)),
        sleep: (ms) => this.clock.sleep(ms, signal),
      },
    );
  }

  /**
   * Whether the page is requested again after this 429: while its `max429` tries last. A 429 the client retried to
   * its end is requeued all the same: this is the one level that retries a crawl's 429s.
   */
  private mayRequeue(attempt: number, err: unknown): err is ServiceError {
    return rateLimited(err) && attempt < this.max429;
  }

  private policyFor(client: ServiceClient): RetryPolicy {
    this.requeue ??= new RetryPolicy({
      attempts: this.max429,
      baseMs: client.retryTiming.baseMs,
      maxMs: client.retryTiming.maxMs,
    });
    return this.requeue;
  }

  /** The error a page fails with; a refusal of the zone is kept, and every later page fails with it unsent. */
  private finalFailure(err: unknown): unknown {
    const named = unknownZone(err, this.opts.zone);
    const aboutZone =
      named !== err || (err instanceof ServiceError && err.code !== undefined && ZONE_CODES.test(err.code));
    if (aboutZone && named instanceof Error) this.zoneRefused ??= named;
    return named;
  }

  /**
   * One signal of our own per run signal: every waiting request listens to it, and it may have as many listeners
   * as the crawl has requests (the run's signal would warn about a leak past 10).
   */
  private crawlSignal(run: AbortSignal): AbortSignal {
    let own = this.signals.get(run);
    if (own === undefined) {
      const ac = new AbortController();
      setMaxListeners(0, ac.signal);
      if (run.aborted) ac.abort(run.reason);
      else run.addEventListener('abort', () => ac.abort(run.reason), { once: true });
      own = ac.signal;
      this.signals.set(run, own);
    }
    return own;
  }
}

/** The service's 400 `zone "<name>" not found` (docs/service.md §5.6), said with the option that names the zone. */
function unknownZone(err: unknown, zone: string): unknown {
  // The service gives this refusal no code: its own words are all there is to recognise it by.
  if (!(err instanceof ServiceError) || err.status !== 400 || !/zone .* not found/i.test(err.serviceMessage))
    return err;
  return new SluiceError(`zone "${zone}" does not exist: ${err.message}`, {
    hint: 'check source.zone: `sluice zones active` lists the zones of the account (a SERP zone is needed)',
    cause: err,
  });
}
