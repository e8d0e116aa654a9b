/**
 * Every page request of a crawl goes through here: a slot under the crawl's concurrency, a token from its one rate
 * limiter, then `POST /request`.
 *
 * 429s are not retried inside the client: the retry hook tells the rate limiter (which slows the whole crawl down)
 * and cancels the client's own retry, and the page is requested again here, after the service's Retry-After, with a
 * new slot and a new token. So retries obey the crawl's rate, its concurrency and its IP-block guard like any other
 * request. A cancelled retry never reached the service (it was waiting out its backoff), so no page is fetched
 * twice. Other failures (5xx, network) keep the client's own retries.
 */
import { setMaxListeners } from 'node:events';
import type { ServiceClient } from '../../client/index.js';
import { SluiceError } from '../../core/errors.js';
import type { Logger, SourceContext } from '../../core/types.js';
import { InFlightLimiter } from './limiter.js';
import { RateLimiter, realClock, type LimiterClock } from './rate-limit.js';

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

export class CrawlFetcher {
  readonly rate: RateLimiter;
  readonly slots: InFlightLimiter;
  private readonly max429: number;
  private readonly clock: LimiterClock;
  private readonly signals = new WeakMap<AbortSignal, AbortSignal>();

  constructor(private readonly opts: CrawlFetcherOptions) {
    this.clock = opts.clock ?? realClock;
    this.slots = new InFlightLimiter(opts.concurrency);
    this.max429 = opts.max429 ?? 10;
    this.rate = new RateLimiter({
      ...(opts.perSecond !== undefined && { perSecond: opts.perSecond }),
      clock: this.clock,
      onPause: ({ pauseMs, count }) =>
        opts.log.warn(
          `${count} responses 429 within 5 minutes: pausing the crawl for ${Math.ceil(pauseMs / 1000)} s ` +
            '(the service blocks an IP after 25); lower rate_limit or concurrency to avoid this',
        ),
    });
  }

  async page(url: string, ctx: SourceContext): Promise<FetchedPage> {
    const client = await this.opts.client();
    const signal = this.crawlSignal(ctx.signal);
    for (let attempt = 1; ; attempt++) {
      const release = await this.slots.acquire(signal, () => this.rate.inFlightBudget());
      const call = new AbortController();
      const forward = (): void => call.abort(signal.reason);
      signal.addEventListener('abort', forward, { once: true });
      let retryAfterMs: number | undefined;
      try {
        await this.rate.take(signal);
        const res = await client.request.page(
          { zone: this.opts.zone, url, format: this.opts.format },
          {
            signal: call.signal,
            onRetry: (info) => {
              if (info.status !== 429) return;
              this.rate.note429();
              if (attempt >= this.max429) return; // let the client's last retries run
              retryAfterMs = info.delayMs;
              call.abort(new RequeueOn429());
            },
          },
        );
        ctx.counters.bytes += res.bytes;
        return res;
      } catch (err) {
        if (signal.aborted) throw err;
        if (retryAfterMs === undefined) {
          // The client gave up on 429 (or does not retry): count it, and try again ourselves while allowed.
          if (statusOf(err) !== 429 || attempt >= this.max429) throw unknownZone(err, this.opts.zone);
          this.rate.note429();
          ctx.counters.retries++;
          retryAfterMs = retryAfterOf(err) ?? 0;
        }
      } finally {
        signal.removeEventListener('abort', forward);
        release();
      }
      // Wait out Retry-After (at least a growing backoff) without holding a slot.
      const backoff = Math.min(30_000, 250 * 2 ** attempt);
      await this.clock.sleep(Math.max(retryAfterMs, backoff), signal);
    }
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

/** The service's 400 `zone "<name>" not found` (api-facts §5.6), said with the option that names the zone. */
function unknownZone(err: unknown, zone: string): unknown {
  if (statusOf(err) !== 400 || !/zone .* not found/i.test((err as Error).message)) return err;
  return new SluiceError(`zone "${zone}" does not exist: ${(err as Error).message}`, {
    hint: 'check source.zone: `sluice zones active` lists the zones of the account (a SERP zone is needed)',
    cause: err,
  });
}

function statusOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const s = (e as { status?: unknown }).status;
    if (typeof s === 'number') return s;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function retryAfterOf(err: unknown): number | undefined {
  const v = (err as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof v === 'number' && v >= 0 ? v : undefined;
}
