import { describe, expect, it } from 'vitest';
import { InFlightLimiter } from '../../../src/sources/crawl/limiter.js';
import { flush } from './fake-clock.js';

describe('InFlightLimiter', () => {
  it('admits at most max at once, then the waiters in arrival order', async () => {
    const slots = new InFlightLimiter(3);
    const releases: (() => void)[] = [];
    const got: number[] = [];
    for (let i = 0; i < 6; i++)
      void slots.acquire().then((r) => {
        got.push(i);
        releases.push(r);
      });
    await flush();
    expect(got).toEqual([0, 1, 2]);
    releases[1]!();
    releases[1]!(); // a second release of the same slot frees nothing more
    await flush();
    expect(got).toEqual([0, 1, 2, 3]);
    expect(slots.inFlight).toBe(3);
    releases[0]!();
    releases[2]!();
    await flush();
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('drops a waiter whose signal aborts', async () => {
    const slots = new InFlightLimiter(1);
    const release = await slots.acquire();
    const ac = new AbortController();
    const p = slots.acquire(ac.signal);
    ac.abort(new Error('gone'));
    await expect(p).rejects.toThrow('gone');
    release();
    expect(slots.inFlight).toBe(0);
    (await slots.acquire())();
  });
});
