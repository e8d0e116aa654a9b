/**
 * The one place that decides whether a failure is worth trying again and how long to wait first. The HTTP client
 * (each request), the crawl fetcher (each page) and the engine (each unit) all ask this module; none of them reads
 * an error's message or guesses from its shape.
 *
 * Errors are typed at the boundary where they happen: the transport wraps socket errors as `NetworkError`, the
 * decoders wrap cut-short or corrupt bytes as `DecodeError` (core/errors.ts), the client turns an HTTP answer into a
 * `ServiceError` whose `transient` flag follows `retryableStatus`. An error this module does not know is terminal.
 */
import type { RetryClassified } from './errors.js';

/** HTTP statuses worth asking again: 429 (busy, asked to slow down) and 5xx (the service failed, not the request). */
export function retryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

function classified(e: unknown): RetryClassified | undefined {
  if (e instanceof Error && typeof (e as Partial<RetryClassified>).transient === 'boolean')
    return e as unknown as RetryClassified;
  return undefined;
}

/**
 * The first classified error along the `cause` chain decides (a unit's error may wrap the request's). An error
 * that nobody classified is terminal: retrying what we do not understand only delays the report.
 */
export function isTransient(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const c = classified(e);
    if (c) return c.transient;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Retry-After of the first classified error along the cause chain. */
export function retryAfterOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const c = classified(e);
    if (c) return c.retryAfterMs;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export interface RetryPolicyOptions {
  /** Tries in all, the first included. */
  attempts: number;
  /**
   * The first wait. The wait after failed try k (1-based) is about `baseMs * 2^(k-1)`, with jitter, capped at
   * `maxMs`: so `baseMs` means what the config's `base_delay_ms` says ("first backoff").
   */
  baseMs: number;
  maxMs: number;
  /** Test seam for the jitter. */
  random?: () => number;
}

/** When to try again and how long to wait: exponential backoff with jitter, Retry-After honoured, both capped. */
export class RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;
  private readonly random: () => number;

  constructor(opts: RetryPolicyOptions) {
    this.attempts = opts.attempts;
    this.baseMs = opts.baseMs;
    this.maxMs = opts.maxMs;
    this.random = opts.random ?? Math.random;
  }

  /** Whether try number `attempt` (1-based) that failed with `err` should be followed by another. */
  shouldRetry(attempt: number, err: unknown): boolean {
    return attempt < this.attempts && isTransient(err);
  }

  /**
   * The wait before the try that follows failed try `attempt` (1-based). The service's Retry-After wins over the
   * backoff; both are capped so a misbehaving header cannot park a run for hours.
   */
  delayMs(attempt: number, err?: unknown): number {
    const retryAfter = err === undefined ? undefined : retryAfterOf(err);
    if (retryAfter !== undefined) return Math.min(this.maxMs, retryAfter);
    const backoff = Math.min(this.maxMs, this.baseMs * 2 ** (attempt - 1));
    // Half fixed, half random: spreads simultaneous retries without ever retrying at once.
    return backoff * (0.5 + this.random() / 2);
  }
}
