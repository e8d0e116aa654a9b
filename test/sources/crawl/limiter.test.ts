import { describe, expect, it } from 'vitest';
import { InFlightLimiter } from '../../../src/sources/crawl/limiter.js';
import { flush } from './fake-clock.js';

describe('InFlightLimiter', () => {
  it('admits at most max at once, and follows a shrinking cap', async () => {
    const slots = new InFlightLimiter(3);
    let cap = Infinity;
    const releases: (() => void)[] = [];
    const got: number[] = [];
    for (let i = 0; i < 6; i++)
      void slots
        .acquire(undefined, () => cap)
        .then((r) => {
          got.push(i);
          releases.push(r);
        });
    await flush();
    expect(got).toEqual([0, 1, 2]);
    cap = 1;
    releases[0]!();
    releases[1]!();
    await flush();
    expect(slots.inFlight).toBe(1); // 2 is still in flight: the cap of 1 admits nobody
    expect(got).toEqual([0, 1, 2]);
    releases[2]!();
    await flush();
    expect(got).toEqual([0, 1, 2, 3]);
    cap = Infinity;
    releases[3]!();
    await flush();
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
    expect(slots.inFlight).toBe(2);
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
