import { describe, expect, it } from 'vitest';
import { InFlightLimiter, Mutex, RwLock } from '../../src/core/concurrency.js';
import { flush } from '../sources/crawl/fake-clock.js';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Mutex', () => {
  it('runs sections one at a time in call order, and survives a failing one', async () => {
    const m = new Mutex();
    const events: string[] = [];
    const section = (name: string, fail = false) =>
      m.run(async () => {
        events.push(`${name}:start`);
        await tick();
        events.push(`${name}:end`);
        if (fail) throw new Error(name);
        return name;
      });
    const results = await Promise.allSettled([section('a'), section('b', true), section('c')]);
    expect(events).toEqual(['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });
});

describe('RwLock', () => {
  it('lets shared holders overlap, and runs an exclusive holder alone, in arrival order', async () => {
    const l = new RwLock();
    const events: string[] = [];
    const hold = (name: string, exclusive: boolean) =>
      (exclusive ? l.exclusive.bind(l) : l.shared.bind(l))(async () => {
        events.push(`${name}+`);
        await tick();
        await tick();
        events.push(`${name}-`);
      });
    await Promise.all([hold('r1', false), hold('r2', false), hold('w', true), hold('r3', false)]);
    expect(events).toEqual(['r1+', 'r2+', 'r1-', 'r2-', 'w+', 'w-', 'r3+', 'r3-']);
  });

  it('releases the lock when a holder fails', async () => {
    const l = new RwLock();
    await expect(l.exclusive(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(l.shared(async () => 'ok')).resolves.toBe('ok');
  });
});

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
