/**
 * The client's one 429 budget (client/throttle.ts) on a manual clock: the slow start, the hold after a 429, the
 * halving, and the invariant the service's IP block needs — never more 429s in five minutes than the budget, even
 * when every request is refused — then a stop that names itself.
 */
import { describe, expect, it } from 'vitest';
import { RateBudgetSpentError } from '../../src/client/errors.js';
import { ServiceThrottle, type Permit } from '../../src/client/throttle.js';
import { ManualClock, flush } from './manual-clock.js';

function throttle(clock: ManualClock, extra: Partial<ConstructorParameters<typeof ServiceThrottle>[0]> = {}) {
  return new ServiceThrottle({
    address: 'https://api.example',
    maxWindow: 64,
    holdBaseMs: 1_000,
    holdMaxMs: 30_000,
    clock,
    ...extra,
  });
}

/** Starts `n` acquires; returns the permits in the order granted. */
function acquireAll(t: ServiceThrottle, n: number): { granted: Permit[]; errors: unknown[] } {
  const granted: Permit[] = [];
  const errors: unknown[] = [];
  for (let i = 0; i < n; i++)
    t.acquire().then(
      (p) => granted.push(p),
      (e: unknown) => errors.push(e),
    );
  return { granted, errors };
}

describe('ServiceThrottle', () => {
  it('starts with 4 in flight, however many wait, and lets one more in per answer (slow start)', async () => {
    const clock = new ManualClock();
    const t = throttle(clock);
    const { granted } = acquireAll(t, 40);
    await flush();
    expect(granted).toHaveLength(4);
    // Round trip 1: four answers, each lets one more in on top of its own slot: eight in flight.
    for (const p of granted.slice(0, 4)) p.done({ status: 200 });
    await flush();
    expect(granted).toHaveLength(12);
    expect(t.concurrency).toBe(8);
  });

  it('after a 429 nothing starts until its Retry-After has passed, and the window is halved once per overload', async () => {
    const clock = new ManualClock();
    const t = throttle(clock, { initialWindow: 8 });
    const first = acquireAll(t, 8);
    await flush();
    first.granted[0]!.done({ status: 429, retryAfterMs: 5_000 });
    first.granted[1]!.done({ status: 429 }); // the same overload: no second halving
    expect(t.concurrency).toBe(4);
    const later = acquireAll(t, 1);
    for (const p of first.granted.slice(2)) p.done({ status: 200 });
    await clock.advanceTo(4_999);
    expect(later.granted).toHaveLength(0);
    await clock.advanceTo(5_000);
    expect(later.granted).toHaveLength(1);
  });

  it('without Retry-After the hold doubles with each 429 in a row, and an answer resets it', async () => {
    const clock = new ManualClock();
    const t = throttle(clock, { initialWindow: 1 });
    const holds: number[] = [];
    for (const status of [429, 429, 429, 200, 429]) {
      const start = clock.now();
      const { granted } = acquireAll(t, 1);
      await flush();
      while (granted.length === 0) await clock.advanceTo(clock.now() + 100);
      holds.push(clock.now() - start);
      granted[0]!.done({ status });
    }
    expect(holds).toEqual([0, 1_000, 2_000, 4_000, 0]);
  });

  it('when every answer is 429: at most the budget in any five minutes, then the run stops, named', async () => {
    const clock = new ManualClock();
    const t = throttle(clock, { initialWindow: 64, holdBaseMs: 10, holdMaxMs: 10 });
    const refusedAt: number[] = [];
    let stopped: unknown;
    const worker = async (): Promise<void> => {
      for (;;) {
        let permit: Permit;
        try {
          permit = await t.acquire();
        } catch (e) {
          stopped = e;
          return;
        }
        await new Promise<void>((r) => clock.after(50, r)); // the request's round trip
        refusedAt.push(clock.now());
        permit.done({ status: 429 });
      }
    };
    // 64 callers at once: a first wave at that concurrency would collect 64 answers of 429.
    const workers = Array.from({ length: 64 }, () => worker());
    await clock.advanceTo(60_000);
    await Promise.all(workers);
    let worst = 0;
    for (const at of refusedAt) worst = Math.max(worst, refusedAt.filter((x) => x > at - 300_000 && x <= at).length);
    expect(worst).toBe(20);
    expect(refusedAt).toHaveLength(20);
    expect(stopped).toBeInstanceOf(RateBudgetSpentError);
    expect((stopped as RateBudgetSpentError).transient).toBe(false);
    expect((stopped as Error).message).toMatch(/https:\/\/api\.example answered 429 .* 20 times within 5 minutes.*25/);
    expect((stopped as RateBudgetSpentError).hint).toMatch(/wait 5 minutes, then run again/);
    await expect(t.acquire()).rejects.toBeInstanceOf(RateBudgetSpentError);
  });

  it('429s older than five minutes leave the budget', async () => {
    const clock = new ManualClock();
    const t = throttle(clock, { budget: 3, initialWindow: 3, holdBaseMs: 1, holdMaxMs: 1 });
    for (let i = 0; i < 2; i++) {
      const { granted } = acquireAll(t, 1);
      await clock.advanceTo(clock.now() + 10);
      granted[0]!.done({ status: 429 });
    }
    expect(t.count429()).toBe(2);
    // One 429 left before the stop: one request at a time may be in flight.
    const two = acquireAll(t, 2);
    await clock.advanceTo(clock.now() + 10);
    expect(two.granted).toHaveLength(1);
    await clock.advanceTo(300_010);
    expect(t.count429()).toBe(1);
    two.granted[0]!.done({ status: 200 });
    await flush();
    expect(two.granted).toHaveLength(2);
  });
});

describe('ServiceThrottle, time moving on between its readings', () => {
  it('a hold that ends while a waiter is queued still lets it in: one reading of the clock per decision', async () => {
    // Each reading of the clock is later than the one before (as the real clock is): the hold ends between the
    // throttle deciding a waiter may not start and working out how long to wait for it.
    class DriftingClock extends ManualClock {
      override now(): number {
        return (this.t += 0.4);
      }
    }
    const clock = new DriftingClock();
    const t = throttle(clock, { holdBaseMs: 1, holdMaxMs: 1 });
    const first = await t.acquire();
    first.done({ status: 429 });
    // The hold is 1 ms from the 429; the next acquire reads the clock twice around its end.
    const next = acquireAll(t, 1);
    await clock.advanceTo(clock.t + 5);
    expect(next.errors).toEqual([]);
    expect(next.granted).toHaveLength(1);
  });
});
