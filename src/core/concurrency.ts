/**
 * The concurrency primitives every layer uses, in one place: `Mutex` (one section at a time), `RwLock` (shared or
 * exclusive), `InFlightLimiter` (at most N holders, waiters abortable). Bounded parallel work over a list (units,
 * parts) is p-limit's job; these guard shared state and in-flight requests.
 */
/** Runs async sections one at a time, in call order. A failed section does not poison the ones after it. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn, fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * Many shared holders or one exclusive holder, granted in arrival order (a waiting exclusive request holds back
 * shared requests that come after it, so it cannot starve).
 */
export class RwLock {
  private readers = 0;
  private writer = false;
  private readonly queue: { exclusive: boolean; grant: () => void }[] = [];

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await fn();
    } finally {
      this.readers--;
      this.drain();
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await fn();
    } finally {
      this.writer = false;
      this.drain();
    }
  }

  private acquire(exclusive: boolean): Promise<void> {
    return new Promise((resolve) => {
      this.queue.push({
        exclusive,
        grant: () => {
          if (exclusive) this.writer = true;
          else this.readers++;
          resolve();
        },
      });
      this.drain();
    });
  }

  private drain(): void {
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (this.writer || (next.exclusive && this.readers > 0)) return;
      this.queue.shift();
      next.grant();
      if (next.exclusive) return;
    }
  }
}

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
