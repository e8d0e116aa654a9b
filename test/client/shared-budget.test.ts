/**
 * The 429 budget shared by the shards of a pipeline (client/shared-budget.ts) through a directory, as the shards
 * share their state directory: four throttles of four "processes" on one manual clock, each with its own
 * FileBudgetPeers over the same real directory. Every request refused: at most the budget in any five minutes across
 * all of them, and every one of them stops, named. One shard's 429 holds the others too.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RateBudgetSpentError } from '../../src/client/errors.js';
import { FileBudgetPeers, REFRESH_MS, shareOf } from '../../src/client/shared-budget.js';
import { ServiceThrottle, SERVICE_WINDOW_MS, type Permit } from '../../src/client/throttle.js';
import { ManualClock, flush } from './manual-clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const quiet = { warn: () => undefined };

function shards(clock: ManualClock, count: number, dir?: string, holdMaxMs = 10): ServiceThrottle[] {
  const shared = dir ?? mkdtempSync(path.join(tmpdir(), 'sluice-budget-'));
  dirs.push(shared);
  return Array.from(
    { length: count },
    (_, index) =>
      new ServiceThrottle({
        address: 'https://api.example',
        maxWindow: 64,
        initialWindow: 64,
        holdBaseMs: 10,
        holdMaxMs,
        clock,
        peers: new FileBudgetPeers(
          shared,
          `shard-${index}-of-${count}`,
          Array.from({ length: count }, (_, i) => `shard-${i}-of-${count}`),
          quiet,
          clock.now(),
          SERVICE_WINDOW_MS,
        ),
      }),
  );
}

describe('shareOf', () => {
  it('splits what is left so that the shares add up to it exactly', () => {
    for (const count of [1, 2, 3, 4, 7])
      for (let left = -2; left <= 25; left++) {
        const parts = Array.from({ length: count }, (_, index) => shareOf(left, { index, count }));
        expect(parts.reduce((a, b) => a + b, 0)).toBe(Math.max(0, left));
        expect(Math.max(...parts) - Math.min(...parts)).toBeLessThanOrEqual(1);
      }
  });
});

describe('a 429 budget shared by four shards through their state directory', () => {
  it('every answer 429: at most 20 in any five minutes across all four, then every shard stops, named', async () => {
    const clock = new ManualClock(1_000_000);
    const throttles = shards(clock, 4);
    const refusedAt: number[] = [];
    const stopped: unknown[] = [];
    const worker = async (t: ServiceThrottle): Promise<void> => {
      for (;;) {
        let permit: Permit;
        try {
          permit = await t.acquire();
        } catch (e) {
          stopped.push(e);
          return;
        }
        await new Promise<void>((r) => clock.after(50, r));
        refusedAt.push(clock.now());
        permit.done({ status: 429 });
      }
    };
    // Each shard with 16 callers at once: alone, each would put its whole budget of 20 at risk at the first wave.
    const workers = throttles.flatMap((t) => Array.from({ length: 16 }, () => worker(t)));
    await clock.advanceTo(clock.now() + 60_000);
    await Promise.all(workers);
    let worst = 0;
    for (const at of refusedAt) worst = Math.max(worst, refusedAt.filter((x) => x > at - 300_000 && x <= at).length);
    expect(worst).toBe(20);
    expect(stopped).toHaveLength(64);
    for (const e of stopped) expect(e).toBeInstanceOf(RateBudgetSpentError);
    expect((stopped[0] as Error).message).toMatch(/answered 429 .* 20 times within 5 minutes/);
    for (const t of throttles) expect(t.count429()).toBe(20);
  });

  it('one shard gets a 429: the others hold too, and count it', async () => {
    const clock = new ManualClock(1_000_000);
    const [a, b] = shards(clock, 2, undefined, 30_000);
    const first = await a!.acquire();
    first.done({ status: 429, retryAfterMs: 5_000 });
    await clock.advanceTo(clock.now() + REFRESH_MS);
    expect(b!.count429()).toBe(1);
    let granted = false;
    void b!.acquire().then(() => (granted = true));
    await clock.advanceTo(clock.now() + 4_000);
    expect(granted).toBe(false);
    await clock.advanceTo(clock.now() + 1_500);
    expect(granted).toBe(true);
  });

  it('a shard run again within five minutes still counts the 429s it got before; older ones are dropped', async () => {
    const clock = new ManualClock(1_000_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-budget-'));
    const [first] = shards(clock, 1, dir);
    for (let i = 0; i < 3; i++) {
      const p = await first!.acquire();
      p.done({ status: 429 });
      await clock.advanceTo(clock.now() + 100);
    }
    const [again] = shards(clock, 1, dir);
    await clock.advanceTo(clock.now() + REFRESH_MS);
    // Its own file, read back as "another process": the 429s of its earlier life.
    expect(again!.count429()).toBe(3);
    await clock.advanceTo(clock.now() + SERVICE_WINDOW_MS);
    expect(shards(clock, 1, dir)[0]!.count429()).toBe(0);
    expect(readdirSync(dir)).toEqual(['shard-0-of-1.429']);
  });

  it('a shard not yet started counts from the start: the first to start takes only its part', async () => {
    const clock = new ManualClock(1_000_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-budget-'));
    dirs.push(dir);
    const first = new FileBudgetPeers(
      dir,
      'shard-0-of-4',
      ['shard-0-of-4', 'shard-1-of-4', 'shard-2-of-4', 'shard-3-of-4'],
      quiet,
      clock.now(),
      SERVICE_WINDOW_MS,
    );
    expect(first.view(0, clock.now()).share).toEqual({ index: 0, count: 4 });
    const t = new ServiceThrottle({
      address: 'https://api.example',
      maxWindow: 64,
      initialWindow: 64,
      holdBaseMs: 10,
      holdMaxMs: 10,
      clock,
      peers: first,
    });
    const granted: Permit[] = [];
    for (let i = 0; i < 20; i++) void t.acquire().then((p) => granted.push(p));
    await flush();
    expect(granted).toHaveLength(5);
    first.leave(clock.now());
  });

  it('a shard that left hands its part to the others: none waits on a part no one uses', async () => {
    const clock = new ManualClock(1_000_000);
    const [a, b] = shards(clock, 2);
    // 19 of the 20 spent: the one left is shard 0's part, and shard 1 may start nothing.
    for (let i = 0; i < 19; i++) {
      const p = await (i % 2 === 0 ? a! : b!).acquire();
      p.done({ status: 429 });
      await clock.advanceTo(clock.now() + 100);
    }
    let granted = false;
    void b!.acquire().then(() => (granted = true));
    await clock.advanceTo(clock.now() + 1_000);
    expect(granted).toBe(false);
    a!.close(new Error('done'));
    await clock.advanceTo(clock.now() + 1_000);
    expect(granted).toBe(true);
  });
});
