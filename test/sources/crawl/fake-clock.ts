/** A manual clock for rate-limiter tests: time moves only when the test advances it. */
import type { LimiterClock } from '../../../src/sources/crawl/rate-limit.js';

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
}

export class FakeClock implements LimiterClock {
  t = 0;
  private timers: Timer[] = [];
  private seq = 0;

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, resolve };
      this.timers.push(timer);
      signal?.addEventListener('abort', () => {
        this.timers = this.timers.filter((x) => x !== timer);
        reject(signal.reason);
      });
    });
  }

  /** Runs every timer due up to `target` in time order, letting woken code run before the next one. */
  async advanceTo(target: number): Promise<void> {
    await flush();
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > target) break;
      this.timers.shift();
      this.t = next.at;
      next.resolve();
      await flush();
    }
    this.t = target;
    await flush();
  }

  advance(ms: number): Promise<void> {
    return this.advanceTo(this.t + ms);
  }

  get pending(): number {
    return this.timers.length;
  }
}

/** Let every queued promise continuation run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
}
