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
 *   token are rescheduled at the slower rate, the first of them one interval of it after the 429. Without a configured rate the crawl runs unthrottled until its first
 *   429, then at half the rate it achieved over the preceding two seconds (at least 4/s), recovering the same way.
 * - The service's IP block (25 answers of 429 within five minutes) is not this limiter's to guard: every request of
 *   the run, crawl pages or not, goes through the client's one 429 budget (client/throttle.ts), which also holds the
 *   first wave to a slow start.
 */
import { SluiceError } from '../../core/errors.js';
import { sleep } from '../../core/sleep.js';

/** Time source; tests drive a fake one. */
export interface LimiterClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: LimiterClock = {
  now: () => performance.timeOrigin + performance.now(),
  sleep,
};

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

  /** Theoretical arrival time of the next token (GCRA); undefined until the first take. */
  private tat: number | undefined;
  /** Rate the slow-down is relative to: the configured one, or the one observed at the first 429. */
  private base: number | undefined;
  private reducedTo: number | undefined;
  private reducedAt = -Infinity;
  private lastDecreaseAt = -Infinity;
  /** Bumped by every 429: waiters holding a reservation made before it take a new one. */
  private epoch = 0;
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

  /** Waits for a token. Rejects when `signal` aborts. */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      let now = this.clock.now();
      const r = this.rate(now);
      if (!Number.isFinite(r)) {
        this.observeStart(now);
        return;
      }
      const { interval, tolerance } = this.spacing(r);
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
    this.epoch++;
    if (this.base === undefined) this.base = Math.max(RateLimiter.MIN_OBSERVED_BASE, this.observedRate(now));
    if (now - this.lastDecreaseAt >= this.decreaseHoldMs || this.reducedTo === undefined) {
      const current = Math.min(this.rate(now), this.base);
      this.reducedTo = Math.max(this.base * this.minFraction, current / 2);
      this.lastDecreaseAt = now;
    }
    this.reducedAt = now;
    // Reservations made at the old rate are dropped, and so is any burst saved up: the next token comes one (new)
    // interval from now, never at once — a 429 is the moment to send less, not a free slot.
    const { interval, tolerance } = this.spacing(this.rate(now));
    this.tat = now + interval + tolerance;
  }

  /** The GCRA's emission interval and burst tolerance at rate `r`. */
  private spacing(r: number): { interval: number; tolerance: number } {
    const interval = 1000 / r;
    return { interval, tolerance: (Math.max(1, this.burst ?? r) - 1) * interval };
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
