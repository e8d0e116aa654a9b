/**
 * At most `max` requests of a crawl in flight, whatever the engine's own unit concurrency (a reviews plan fetches
 * SERP pages outside any unit, and a unit may be retried while others run). The cap can shrink while 429s are in
 * the rate limiter's window (`cap`), which is why this is not a plain semaphore.
 */
export class InFlightLimiter {
  private active = 0;
  private readonly waiters: { cap: () => number; resolve: () => void }[] = [];

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new Error(`concurrency must be at least 1, got ${max}`);
  }

  get inFlight(): number {
    return this.active;
  }

  /** Resolves with a release function once a slot is free under both `max` and `cap()`. */
  async acquire(signal?: AbortSignal, cap: () => number = () => Infinity): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.waiters.length === 0 && this.active < this.limit(cap)) return this.grant();
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        cap,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
    return this.grant(false);
  }

  private limit(cap: () => number): number {
    return Math.max(1, Math.min(this.max, cap()));
  }

  private grant(count = true): () => void {
    if (count) this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      this.wake();
    };
  }

  private wake(): void {
    // FIFO: only the head may go, so a shrunken cap cannot be overtaken by later arrivals.
    while (this.waiters.length > 0 && this.active < this.limit(this.waiters[0]!.cap)) {
      this.active++;
      this.waiters.shift()!.resolve();
    }
  }
}
