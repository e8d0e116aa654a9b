import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../src/core/errors.js';
import { RateLimiter, isValidRate, parseRate } from '../../../src/sources/crawl/rate-limit.js';
import { FakeClock } from './fake-clock.js';

/** Starts `n` takers at once and returns the clock time at which each got its token. */
function takeAll(limiter: RateLimiter, clock: FakeClock, n: number): number[] {
  const grants: number[] = [];
  for (let i = 0; i < n; i++) void limiter.take().then(() => grants.push(clock.now()));
  return grants;
}

describe('parseRate', () => {
  it('reads per second, minute and hour', () => {
    expect(parseRate('20/s')).toBe(20);
    expect(parseRate('600/m')).toBe(10);
    expect(parseRate('7200/h')).toBe(2);
    expect(parseRate(' 1.5 / sec ')).toBe(1.5);
    expect(parseRate('120/minute')).toBe(2);
  });

  it('rejects what is not a rate, saying how to write one', () => {
    for (const bad of ['fast', '0/s', '20/d', '-1/s', '20', '/s']) {
      expect(isValidRate(bad)).toBe(false);
      let err: unknown;
      try {
        parseRate(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SluiceError);
      expect((err as SluiceError).hint).toMatch(/20\/s/);
    }
  });
});

describe('RateLimiter', () => {
  it('spaces tokens evenly at the configured rate, starting with one token', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 20, clock });
    const grants = takeAll(limiter, clock, 100);
    await clock.advanceTo(10_000);
    expect(grants).toHaveLength(100);
    expect(grants.map((t, i) => t - i * 50)).toEqual(new Array(100).fill(0));
    // 99 intervals in 4.95 s: exactly 20/s.
    expect(99 / ((grants[99]! - grants[0]!) / 1000)).toBeCloseTo(20, 9);
  });

  it('allows a burst after idling, then returns to the steady rate', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 10, burst: 5, clock });
    await limiter.take();
    await clock.advanceTo(10_000);
    const grants = takeAll(limiter, clock, 8);
    await clock.advanceTo(20_000);
    expect(grants).toEqual([10_000, 10_000, 10_000, 10_000, 10_000, 10_100, 10_200, 10_300]);
  });

  it('halves the rate on a 429 (once per overload), holds it, then recovers additively', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 20, clock, cooldownMs: 10_000, recoverStepMs: 1000 });
    expect(limiter.rate()).toBe(20);
    limiter.note429();
    expect(limiter.rate()).toBe(10);
    await clock.advanceTo(500);
    limiter.note429(); // same overload: no second halving
    expect(limiter.rate()).toBe(10);
    await clock.advanceTo(1500);
    limiter.note429();
    expect(limiter.rate()).toBe(5);
    await clock.advanceTo(1500 + 9_999);
    expect(limiter.rate()).toBe(5);
    await clock.advanceTo(1500 + 10_000 + 3_000);
    expect(limiter.rate()).toBe(5 + 3 * 2);
    await clock.advanceTo(1500 + 10_000 + 8_000);
    expect(limiter.rate()).toBe(20);
    await clock.advanceTo(60_000);
    expect(limiter.rate()).toBe(20);
  });

  it('reschedules requests already waiting at the slower rate when a 429 arrives', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 10, clock });
    const grants = takeAll(limiter, clock, 6);
    await clock.advanceTo(150);
    expect(grants).toEqual([0, 100]);
    limiter.note429(); // now 5/s: 200 ms apart
    await clock.advanceTo(5_000);
    expect(grants).toHaveLength(6);
    const after = grants.slice(2);
    for (let i = 1; i < after.length; i++) expect(after[i]! - after[i - 1]!).toBeGreaterThanOrEqual(200);
  });

  it('after a 429 the next token comes one interval of the slower rate later, never at once', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 10, clock });
    await limiter.take();
    // Idle long enough to save up a full burst (one second's worth): without the 429 these would all go at once.
    await clock.advanceTo(5_000);
    limiter.note429(); // now 5/s: 200 ms apart
    const grants = takeAll(limiter, clock, 3);
    await clock.advanceTo(10_000);
    expect(grants).toEqual([5_200, 5_400, 5_600]);
  });

  it('an unconfigured crawl keeps the interval of its slowed-down rate after a 429 too', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    for (let i = 0; i < 40; i++) {
      await limiter.take();
      await clock.advance(50);
    }
    limiter.note429(); // ~20/s observed → ~10/s
    const at = clock.now();
    const grants = takeAll(limiter, clock, 2);
    await clock.advance(1_000);
    expect(grants[0]! - at).toBeCloseTo(1000 / limiter.rate(), 6);
    expect(grants[1]! - grants[0]!).toBeCloseTo(1000 / limiter.rate(), 6);
  });

  it('without a configured rate runs unthrottled, then at half the observed rate after a 429', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    for (let i = 0; i < 40; i++) {
      await limiter.take(); // resolves without the clock moving
      await clock.advance(50);
    }
    expect(limiter.rate()).toBe(Infinity);
    limiter.note429();
    expect(limiter.rate()).toBeCloseTo(10, 0); // ~20/s observed over the last 2 s → ~10/s
  });

  it('rejects a waiting take when its signal aborts', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ perSecond: 1, clock });
    await limiter.take();
    const ac = new AbortController();
    const p = limiter.take(ac.signal);
    ac.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
  });
});
