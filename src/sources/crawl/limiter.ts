/**
 * At most `max` requests of a crawl in flight, whatever the engine's own unit concurrency (a reviews plan fetches
 * SERP pages outside any unit, and a unit may be retried while others run). Waiters are served in arrival order.
 */
export class InFlightLimiter {
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new Error(`concurrency must be at least 1, got ${max}`);
  }

  get inFlight(): number {
    return this.active;
  }

  /** Resolves with a release function once a slot is free. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.waiters.length === 0 && this.active < this.max) return this.grant();
    await new Promise<void>((resolve, reject) => {
      const waiter = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
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
    while (this.waiters.length > 0 && this.active < this.max) {
      this.active++;
      this.waiters.shift()!();
    }
  }
}
