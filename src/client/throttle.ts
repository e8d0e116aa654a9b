/**
 * One 429 budget per service address, shared by every request of a run: downloads, polls, crawl pages, paid calls.
 *
 * The service blocks an IP that gets 25 answers of 429 within five minutes, on every call, until its support clears
 * it (docs/service.md §6). A client that retries each request on its own cannot keep that rule: four parts × four
 * unit attempts × six client tries reach 25 in seconds. So every request of the client asks this throttle for a
 * permit first, and tells it what came back:
 *
 * - **Never more 429s than the budget.** A request starts only while the requests in flight, each of which may yet
 *   be answered 429, fit in what is left of the budget (`budget` minus the 429s in the last five minutes). So even
 *   if every request in flight were refused, the window holds at most `budget` (20, under the service's 25) — from
 *   the very first request, whatever the concurrency asked for.
 * - **A slow start, then AIMD.** At most `initialWindow` requests are in flight at first; each success lets one
 *   more in (doubling per round trip) up to `maxWindow`. A 429 halves the window (once per overload: 429s of
 *   requests started before the last halving do not halve it again) and growth becomes additive.
 * - **Hold on 429.** The service's guidance is to stop sending as soon as a 429 comes: after one, no request starts
 *   until its Retry-After has passed (else a backoff from the client's base delay, doubling with each 429 in a row,
 *   capped), whichever request it was.
 * - **Stop before the block.** When the budget is spent, the run stops with `RateBudgetSpentError` (every waiting
 *   and later request gets it): risking the block would cost more than the run.
 *
 * - **Shared with the other shards** behind the same address (`peers`, shared-budget.ts): their 429s count in the
 *   window and their holds hold this process too, and it has in flight at most its share of what is left.
 *
 * Time here is this machine's: a window of five real minutes is at least as strict as the service's own.
 */
import { RateBudgetSpentError } from './errors.js';
import { shareOf, type BudgetPeers } from './shared-budget.js';

/** The service blocks an IP at this many 429s within `SERVICE_WINDOW_MS`. */
export const SERVICE_BLOCK_AFTER = 25;
export const SERVICE_WINDOW_MS = 5 * 60_000;
/** 429s a run may collect within the window: a margin under the block for other processes on the same IP. */
export const DEFAULT_429_BUDGET = 20;
/** Requests in flight before the first answers have come back. */
export const DEFAULT_INITIAL_WINDOW = 4;

export interface ThrottleClock {
  now(): number;
  /** Calls `fn` after `ms`; returns a function that cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export interface ThrottleOptions {
  /** Where the budget is for (named in the stop message). */
  address: string;
  /** 429s allowed within `windowMs` before the run stops. Default 20. */
  budget?: number;
  windowMs?: number;
  /** Requests in flight at first (slow start). Default 4. */
  initialWindow?: number;
  /** Requests in flight at most (the connection pool's size). */
  maxWindow: number;
  /** The hold after a 429 without Retry-After: `holdBaseMs × 2^(k-1)` for the k-th 429 in a row, at most `holdMaxMs`. */
  holdBaseMs: number;
  holdMaxMs: number;
  clock: ThrottleClock;
  /** The processes this budget is shared with (the pipeline's other shards); none: this process has it alone. */
  peers?: BudgetPeers;
}

/** While requests wait on what the other shards hold or spent, how often their files are looked at again. */
const PEER_POLL_MS = 250;

/** What a request tells the throttle when its answer's status is known (or when it got none). */
export type Outcome = { status: number; retryAfterMs?: number } | 'no_answer';

export interface Permit {
  /** Once per permit; later calls are ignored. */
  done(outcome: Outcome): void;
}

interface Waiter {
  resolve: (permit: Permit) => void;
  reject: (err: unknown) => void;
}

export class ServiceThrottle {
  private readonly budget: number;
  private readonly windowMs: number;
  private inFlight = 0;
  private window: number;
  private threshold = Infinity;
  /** Bumped by each halving: a permit granted before it does not halve the window again. */
  private epoch = 0;
  private readonly recent429: number[] = [];
  private streak = 0;
  private holdUntil = -Infinity;
  private cancelHold: (() => void) | undefined;
  private spent: RateBudgetSpentError | undefined;
  private total429 = 0;
  private readonly waiters: Waiter[] = [];

  constructor(private readonly opts: ThrottleOptions) {
    this.budget = Math.min(opts.budget ?? DEFAULT_429_BUDGET, SERVICE_BLOCK_AFTER - 1);
    this.windowMs = opts.windowMs ?? SERVICE_WINDOW_MS;
    this.window = Math.max(1, Math.min(opts.initialWindow ?? DEFAULT_INITIAL_WINDOW, opts.maxWindow));
  }

  /** 429s answered within the window now: to this process, and to the shards it shares the budget with. */
  count429(): number {
    return this.recent(this.opts.clock.now());
  }

  private recent(now: number): number {
    this.prune(now);
    return this.recent429.length + (this.opts.peers?.view(now - this.windowMs, now).count ?? 0);
  }

  /** 429s answered over the client's life. */
  get answered429(): number {
    return this.total429;
  }

  /** Requests allowed in flight now (the congestion window). */
  get concurrency(): number {
    return Math.floor(this.window);
  }

  /** Waits for a permit; rejects with `RateBudgetSpentError` once the budget is spent, or with the signal's reason. */
  acquire(signal?: AbortSignal): Promise<Permit> {
    if (this.spent) return Promise.reject(this.spent);
    signal?.throwIfAborted();
    if (this.waiters.length === 0 && this.mayStart(this.opts.clock.now())) return Promise.resolve(this.grant());
    return new Promise<Permit>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: (p) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(p);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.wake();
    });
  }

  private mayStart(now: number): boolean {
    if (now < this.holdUntil) return false;
    const peers = this.opts.peers;
    if (peers) {
      const view = peers.view(now - this.windowMs, now);
      if (now < view.holdUntil) return false;
      this.prune(now);
      const recent = this.recent429.length + view.count;
      // The other shards spent it: this one stops as they do.
      if (recent >= this.budget) {
        this.spend(recent);
        return false;
      }
      // Every request in flight of every shard may still be refused: each shard's must fit in its share.
      return this.inFlight < Math.floor(this.window) && this.inFlight + 1 <= shareOf(this.budget - recent, view.share);
    }
    this.prune(now);
    // Every request in flight may still be refused: together they must fit in what is left of the budget.
    return this.inFlight < Math.floor(this.window) && this.inFlight + 1 <= this.budget - this.recent429.length;
  }

  private grant(): Permit {
    this.inFlight++;
    const epoch = this.epoch;
    let settled = false;
    return {
      done: (outcome) => {
        if (settled) return;
        settled = true;
        this.inFlight--;
        if (outcome !== 'no_answer') {
          if (outcome.status === 429) this.on429(epoch, outcome.retryAfterMs);
          else this.onAnswer();
        }
        this.wake();
      },
    };
  }

  private onAnswer(): void {
    this.streak = 0;
    // Slow start doubles the window per round trip; after a halving, one more per window's worth of answers.
    this.window = Math.min(this.opts.maxWindow, this.window + (this.window < this.threshold ? 1 : 1 / this.window));
  }

  private on429(epoch: number, retryAfterMs: number | undefined): void {
    const now = this.opts.clock.now();
    this.total429++;
    this.recent429.push(now);
    this.streak++;
    if (epoch === this.epoch) {
      this.threshold = Math.max(1, this.window / 2);
      this.window = this.threshold;
      this.epoch++;
    }
    const hold = Math.min(this.opts.holdMaxMs, retryAfterMs ?? this.opts.holdBaseMs * 2 ** (this.streak - 1));
    this.holdUntil = Math.max(this.holdUntil, now + hold);
    this.opts.peers?.record(now, this.holdUntil);
    const recent = this.recent(now);
    if (recent >= this.budget) this.spend(recent);
  }

  private spend(recent: number): void {
    this.spent ??= new RateBudgetSpentError(this.opts.address, recent, SERVICE_BLOCK_AFTER);
    for (const w of this.waiters.splice(0)) w.reject(this.spent);
  }

  /** Grants permits to waiters in arrival order while they fit; arms one timer for the end of a hold. */
  private wake(): void {
    if (this.spent) {
      for (const w of this.waiters.splice(0)) w.reject(this.spent);
      return;
    }
    // One reading of the clock for the decision and the timer: read twice, a hold that ends between the two reads
    // would leave its waiters with neither a permit nor a timer.
    const now = this.opts.clock.now();
    while (this.waiters.length > 0 && this.mayStart(now)) this.waiters.shift()!.resolve(this.grant());
    if (this.waiters.length === 0 || this.cancelHold !== undefined) return;
    const own = this.holdUntil - now;
    // What the other shards hold or spent changes without an answer here: look again while requests wait.
    const wait = this.opts.peers ? Math.min(Math.max(own, 0) || PEER_POLL_MS, PEER_POLL_MS) : own;
    if (wait <= 0) return;
    this.cancelHold = this.opts.clock.after(wait, () => {
      this.cancelHold = undefined;
      this.wake();
    });
  }

  /** Rejects what still waits and drops the timer (the client is closing). */
  close(reason: unknown): void {
    this.opts.peers?.leave(this.opts.clock.now());
    this.cancelHold?.();
    this.cancelHold = undefined;
    for (const w of this.waiters.splice(0)) w.reject(reason);
  }

  private prune(now: number): void {
    while (this.recent429.length > 0 && this.recent429[0]! <= now - this.windowMs) this.recent429.shift();
  }
}

/** This machine's clock. */
export const realThrottleClock: ThrottleClock = {
  now: () => performance.timeOrigin + performance.now(),
  after: (ms, fn) => {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};
