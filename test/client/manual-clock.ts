/** The throttle's clock in its tests: time moves only when the test says; `after` timers fire in order as it passes them. */
import type { ThrottleClock } from '../../src/client/throttle.js';

export class ManualClock implements ThrottleClock {
  private timers: { at: number; fn: () => void }[] = [];

  constructor(public t = 0) {}

  now(): number {
    return this.t;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }

  async advanceTo(target: number): Promise<void> {
    for (;;) {
      await flush();
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > target) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = target;
    await flush();
  }
}

/** Lets promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
