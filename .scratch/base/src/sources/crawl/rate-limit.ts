/**
 * One rate limiter shared by every request of a crawl: a token bucket that slows down when the service answers 429.
 *
 * - Steady rate: `rate` tokens per second, spaced evenly (a GCRA, "virtual scheduling" token bucket), so the
 *   achieved rate over any stretch of a busy crawl is the configured one. `burst` tokens (default one second's
 *   worth) may be taken at once after an idle period; the bucket starts with a single token, so a crawl's first
 *   second is not a burst on top of the steady rate.
 * - Adaptive slow-down (AIMD): a 429 halves the current rate (at most once per `decreaseHoldMs`, since one
 *   overload shows up as several 429s at once), holds it for `cooldownMs`, then adds back `recoverFraction` of the
 *   configured rate every `recoverStepMs` until the configured rate is reached. Requests already waiting for a
 *   token are rescheduled at the slower rate. Without a configured rate the crawl runs unthrottled until its first
 *   429, then at half the rate it achieved over the preceding two seconds (at least 4/s), recovering the same way.
 * - IP-block guard: the real service blocks an IP after 25 responses of 429 within 5 minutes. The limiter counts
 *   429s in a sliding `windowMs`; once `pauseAfter` (15) are in the window, the whole crawl pauses until the oldest
 *   leaves the window. While any 429 is in the window, requests in flight are held to the 429s still allowed
 *   (`inFlightBudget`), so even if every one of them failed the window stays at `pauseAfter`. The one case it cannot
 *   bound is the first wave: requests already in flight when the very first 429 arrives — keep `concurrency` well
 *   under 25 against the real service.
 */
import { SluiceError } from '../../core/errors.js';

/** Time source; tests drive a fake one. */
export interface LimiterClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: LimiterClock = {
  now: () => performance.timeOrigin + performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = (): void => {
        clearTimeout(t);
        reject(abortReason(signal!));
      };
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

const UNITS: Record<string, number> = {
  s: 1,
  sec: 1,
  second: 1,
  m: 60,
  min: 60,
  minute: 60,
  h: 3600,
  hour: 3600,
};

/** `"20/s"`, `"600/m"`, `"1000/h"` (also `/sec`, `/min`, `/minute`, `/hour`) → requests per second. */
export function parseRate(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*\/\s*([a-z]+)\s*$/i.exec(text);
  const per = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  const n = m ? Number(m[1]) : NaN;
  if (!m || per === undefined || !(n > 0))
    throw new SluiceError(`invalid rate_limit "${text}"`, {
      hint: 'write a positive number of requests per second, minute or hour, e.g. "20/s", "600/m" or "5000/h"',
    });
  return n / per;
}

/** For zod refinements: the same check as `parseRate`, without throwing. */
export function isValidRate(text: string): boolean {
  try {
    parseRate(text);
    return true;
  } catch {
    return false;
  }
}

export interface RateLimiterOptions {
  /** Requests per second; undefined = unthrottled until the first 429. */
  perSecond?: number;
  /** Tokens that may be taken at once after idling. Default: one second's worth (at least 1). */
  burst?: number;
  clock?: LimiterClock;
  /** How long a halved rate is held before it starts to recover. Default 10 s. */
  cooldownMs?: number;
  /** Recovery step interval. Default 1 s. */
  recoverStepMs?: number;
  /** Share of the configured rate added back per step. Default 0.1. */
  recoverFraction?: number;
  /** Several 429s within this span count as one overload (one halving). Default 1 s. */
  decreaseHoldMs?: number;
  /** The rate never drops below this share of the configured one. Default 1/64. */
  minFraction?: number;
  /** Sliding window of the IP-block guard. Default 5 minutes. */
  windowMs?: number;
  /** 429s in the window that pause the crawl. Default 15 (the service blocks at 25). */
  pauseAfter?: number;
  /** Told when the crawl pauses (for a log line). */
  onPause?: (info: { untilMs: number; pauseMs: number; count: number }) => void;
}

export class RateLimiter {
  private readonly clock: LimiterClock;
  private readonly configured: number | undefined;
  private readonly burst: number | undefined;
  private readonly cooldownMs: number;
  private readonly recoverStepMs: number;
  private readonly recoverFraction: number;
  private readonly decreaseHoldMs: number;
  private readonly minFraction: number;
  private readonly windowMs: number;
  private readonly pauseAfter: number;
  private readonly onPause: RateLimiterOptions['onPause'];

  /** Theoretical arrival time of the next token (GCRA); undefined until the first take. */
  private tat: number | undefined;
  /** Rate the slow-down is relative to: the configured one, or the one observed at the first 429. */
  private base: number | undefined;
  private reducedTo: number | undefined;
  private reducedAt = -Infinity;
  private lastDecreaseAt = -Infinity;
  private pausedUntil = -Infinity;
  /** Bumped by every 429: waiters holding a reservation made before it take a new one. */
  private epoch = 0;
  private readonly recent429: number[] = [];
  /** Start times of recent requests, to estimate the achieved rate when none is configured. */
  private readonly recentStarts: number[] = [];
  private static readonly OBSERVE_MS = 2000;
  /** An unconfigured crawl's slow-down starts from at least this rate, so a 429 in its first second cannot stall it. */
  private static readonly MIN_OBSERVED_BASE = 4;

  constructor(opts: RateLimiterOptions = {}) {
    if (opts.perSecond !== undefined && !(opts.perSecond > 0))
      throw new SluiceError(`invalid rate ${opts.perSecond}/s`, { hint: 'use a positive rate' });
    this.clock = opts.clock ?? realClock;
    this.configured = opts.perSecond;
    this.base = opts.perSecond;
    this.burst = opts.burst;
    this.cooldownMs = opts.cooldownMs ?? 10_000;
    this.recoverStepMs = opts.recoverStepMs ?? 1000;
    this.recoverFraction = opts.recoverFraction ?? 0.1;
    this.decreaseHoldMs = opts.decreaseHoldMs ?? 1000;
    this.minFraction = opts.minFraction ?? 1 / 64;
    this.windowMs = opts.windowMs ?? 300_000;
    this.pauseAfter = opts.pauseAfter ?? 15;
    this.onPause = opts.onPause;
  }

  /** Requests per second allowed now (Infinity when unthrottled). */
  rate(now = this.clock.now()): number {
    if (this.reducedTo === undefined || this.base === undefined) return this.configured ?? Infinity;
    const since = now - this.reducedAt - this.cooldownMs;
    if (since < 0) return this.reducedTo;
    const r = this.reducedTo + this.base * this.recoverFraction * Math.floor(since / this.recoverStepMs);
    if (r < this.base) return r;
    // Fully recovered: forget the slow-down (an unconfigured limiter becomes unthrottled again).
    this.reducedTo = undefined;
    if (this.configured === undefined) this.base = undefined;
    return this.configured ?? Infinity;
  }

  /** 429s inside the sliding window now. */
  count429(now = this.clock.now()): number {
    this.prune(now);
    return this.recent429.length;
  }

  /** Epoch ms until which the crawl is paused (in the past when it is not). */
  get pausedUntilMs(): number {
    return this.pausedUntil;
  }

  /**
   * How many requests may be in flight given the 429s in the window: unlimited while there are none, else the
   * 429s still allowed before the pause threshold (at least 1, so the crawl can make progress after a pause).
   */
  inFlightBudget(now = this.clock.now()): number {
    const n = this.count429(now);
    return n === 0 ? Infinity : Math.max(1, this.pauseAfter - n);
  }

  /** Waits for a token (and for any pause to end). Rejects when `signal` aborts. */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      let now = this.clock.now();
      if (this.pausedUntil > now) {
        await this.clock.sleep(this.pausedUntil - now, signal);
        continue;
      }
      const r = this.rate(now);
      if (!Number.isFinite(r)) {
        this.observeStart(now);
        return;
      }
      const interval = 1000 / r;
      const burst = Math.max(1, this.burst ?? r);
      const tolerance = (burst - 1) * interval;
      // Start with one token, not a full bucket: the first second runs at the steady rate.
      this.tat ??= now + tolerance;
      const at = Math.max(now, this.tat - tolerance);
      this.tat = Math.max(this.tat, now) + interval;
      const epoch = this.epoch;
      if (at > now) {
        await this.clock.sleep(at - now, signal);
        now = this.clock.now();
      }
      // A 429 arrived while we waited: this reservation was made at the old rate; take a new one.
      if (epoch !== this.epoch) continue;
      this.observeStart(now);
      return;
    }
  }

  /** Record a 429 from the service (seen by a retry hook or as an error). */
  note429(): void {
    const now = this.clock.now();
    this.prune(now);
    this.recent429.push(now);
    this.epoch++;
    // Reservations made at the old rate are dropped; the next token comes one (new) interval from now.
    this.tat = undefined;
    if (this.base === undefined) this.base = Math.max(RateLimiter.MIN_OBSERVED_BASE, this.observedRate(now));
    if (now - this.lastDecreaseAt >= this.decreaseHoldMs || this.reducedTo === undefined) {
      const current = Math.min(this.rate(now), this.base);
      this.reducedTo = Math.max(this.base * this.minFraction, current / 2);
      this.lastDecreaseAt = now;
    }
    this.reducedAt = now;
    const n = this.recent429.length;
    if (n >= this.pauseAfter) {
      // Pause until enough 429s have left the window that the count is below the threshold again.
      const until = this.recent429[n - this.pauseAfter]! + this.windowMs;
      if (until > this.pausedUntil) {
        this.pausedUntil = until;
        this.onPause?.({ untilMs: until, pauseMs: until - now, count: n });
      }
    }
  }

  private prune(now: number): void {
    while (this.recent429.length > 0 && this.recent429[0]! <= now - this.windowMs) this.recent429.shift();
  }

  private observeStart(now: number): void {
    if (this.configured !== undefined) return;
    this.recentStarts.push(now);
    while (this.recentStarts.length > 0 && this.recentStarts[0]! <= now - RateLimiter.OBSERVE_MS)
      this.recentStarts.shift();
  }

  private observedRate(now: number): number {
    const since = now - RateLimiter.OBSERVE_MS;
    return (this.recentStarts.filter((t) => t > since).length * 1000) / RateLimiter.OBSERVE_MS;
  }
}
