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
import { sleep as realSleep } from './sleep.js';

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

/**
 * Failures already retried where they happened, as often as the policy there allowed (the client's request loop).
 * A level above (the unit) does not retry them again: one budget per cause, not the product of every level's.
 */
const spent = new WeakSet<object>();

/** Marks `err` as retried to the end of its own policy: `shouldRetry` of any policy above says no to it. */
export function markRetriesSpent<E>(err: E): E {
  if (typeof err === 'object' && err !== null) spent.add(err);
  return err;
}

/** Whether an error along the cause chain, up to the first classified one, had its retries spent (`markRetriesSpent`). */
export function retriesSpent(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (typeof e === 'object' && spent.has(e)) return true;
    if (classified(e)) return false;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
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
  /** Growth of the wait from one try to the next (default 2; polls grow gentler). */
  factor?: number;
  /** Test seam for the jitter. */
  random?: () => number;
}

/** When to try again and how long to wait: exponential backoff with jitter, Retry-After honoured, both capped. */
export class RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;
  readonly factor: number;
  private readonly random: () => number;

  constructor(opts: RetryPolicyOptions) {
    this.attempts = opts.attempts;
    this.baseMs = opts.baseMs;
    this.maxMs = opts.maxMs;
    this.factor = opts.factor ?? 2;
    this.random = opts.random ?? Math.random;
  }

  /**
   * Whether try number `attempt` (1-based) that failed with `err` should be followed by another: a transient failure
   * while tries remain, unless it was already retried where it happened (`markRetriesSpent`).
   */
  shouldRetry(attempt: number, err: unknown): boolean {
    return attempt < this.attempts && isTransient(err) && !retriesSpent(err);
  }

  /**
   * The wait before the try that follows failed try `attempt` (1-based). The service's Retry-After wins over the
   * backoff; both are capped so a misbehaving header cannot park a run for hours.
   */
  delayMs(attempt: number, err?: unknown): number {
    return this.waitMs(attempt, err === undefined ? undefined : retryAfterOf(err));
  }

  /** `delayMs` with the other side's Retry-After given as such (a poll's "not yet" answer is no error). */
  waitMs(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return Math.min(this.maxMs, retryAfterMs);
    const backoff = Math.min(this.maxMs, this.baseMs * this.factor ** (attempt - 1));
    // Half fixed, half random: spreads simultaneous retries without ever retrying at once.
    return backoff * (0.5 + this.random() / 2);
  }
}

export interface RetryingOptions {
  policy: RetryPolicy;
  /**
   * The decision after failed try `attempt`: the wait before the next try, or undefined to give up with `err`; it may
   * throw the error to report instead (one that says what was tried). Default: none once `signal` aborted, else the
   * policy's `shouldRetry` and `delayMs`.
   */
  next?: (attempt: number, err: unknown) => number | undefined;
  /** Told before each wait (logs, counters, notices). */
  onRetry?: (attempt: number, err: unknown, delayMs: number) => void;
  /** Ends a wait early (rejecting with its reason); with the default `next`, an aborted signal tries nothing again. */
  signal?: AbortSignal;
  /** Test seam (a fake clock's sleep). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * The one retry loop: `tryOnce` until it succeeds or the decision (`next`, by default the policy's) gives up. Every
 * retry in sluice goes through here (the client's requests, a unit's attempts, opening sinks, a crawl's pages, a
 * sink's reads, webhooks), so backoff, jitter, Retry-After and "never a 4xx" are decided in one place.
 */
export async function retrying<T>(tryOnce: (attempt: number) => Promise<T>, opts: RetryingOptions): Promise<T> {
  const { policy, signal } = opts;
  const next =
    opts.next ??
    ((attempt: number, err: unknown) =>
      !signal?.aborted && policy.shouldRetry(attempt, err) ? policy.delayMs(attempt, err) : undefined);
  const wait = opts.sleep ?? realSleep;
  for (let attempt = 1; ; attempt++) {
    let err: unknown;
    try {
      return await tryOnce(attempt);
    } catch (thrown) {
      err = thrown;
    }
    const delayMs = next(attempt, err);
    if (delayMs === undefined) throw err;
    opts.onRetry?.(attempt, err, delayMs);
    await wait(delayMs, signal);
  }
}

/** A poll's answer "not yet"; `retryAfterMs` when the other side said how long to wait. */
export interface NotYet {
  readonly notYet: true;
  readonly retryAfterMs?: number;
}

export function notYet(retryAfterMs?: number): NotYet {
  return retryAfterMs === undefined ? { notYet: true } : { notYet: true, retryAfterMs };
}

function isNotYet(v: unknown): v is NotYet {
  return typeof v === 'object' && v !== null && (v as Partial<NotYet>).notYet === true;
}

/**
 * The waits of a status poll: from `firstMs`, growing ×1.5 (gentler than a retry's ×2: the other side is working,
 * not failing), up to `maxMs`, with the policy's jitter; as many asks as the poll's time allows.
 */
export function pollPolicy(firstMs: number, maxMs: number): RetryPolicy {
  return new RetryPolicy({ attempts: Number.MAX_SAFE_INTEGER, baseMs: firstMs, maxMs, factor: 1.5 });
}

export interface PollUntilOptions {
  /** The waits between asks: its backoff with jitter (`factor` for a gentler growth), Retry-After honoured. */
  policy: RetryPolicy;
  /** No wait is started that would end later than this after the first ask; 0: no wait at all, not even of 0 ms. */
  timeoutMs: number;
  /** The error when the time is up. */
  timedOut: () => Error;
  signal?: AbortSignal;
  /** Told before each wait. */
  onWait?: (attempt: number, delayMs: number) => void;
}

/**
 * The one polling loop: asks until the answer is not `notYet()`, waiting by the policy between asks, within
 * `timeoutMs`. What the answer means (done, failed, still running) is the caller's: a failure is thrown by `ask`.
 */
export async function pollUntil<T>(ask: (attempt: number) => Promise<T | NotYet>, opts: PollUntilOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const answer = await ask(attempt);
    if (!isNotYet(answer)) return answer;
    const delayMs = opts.policy.waitMs(attempt, answer.retryAfterMs);
    // Without a budget the first "not yet" is the answer: a Retry-After of 0 within the same millisecond is no licence.
    if (opts.timeoutMs <= 0 || Date.now() + delayMs > deadline) throw opts.timedOut();
    opts.onWait?.(attempt, delayMs);
    await realSleep(delayMs, opts.signal);
  }
}
