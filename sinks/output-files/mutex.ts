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
