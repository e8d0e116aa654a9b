/**
 * The crawl fetcher's retry decisions against the real emulator: a 429 goes back through the crawl's rate limiter
 * and waits the crawl's `RetryPolicy` (Retry-After first), other transient failures stay with the client's retries,
 * and a terminal answer fails the page at once. Time runs on a virtual clock so the waits can be read exactly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceError, createClient, type ServiceClient } from '../../../src/client/index.js';
import { SluiceError } from '../../../src/core/errors.js';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server.js';
import { PaidLedger } from '../../../src/state/paid-ledger.js';
import { MemoryStateStore } from '../../../src/state/state-store.js';
import { CrawlFetcher } from '../../../src/sources/crawl/fetcher.js';
import type { LimiterClock } from '../../../src/sources/crawl/rate-limit.js';
import { API_KEY, REQUEST_ROUTE, quietLogger } from '../crawl-harness.js';

const URL = 'https://www.google.com/search?q=pizza';
const RATE = 1000;

/** Sleeps end at once and move virtual time on; every wait asked for is listed. */
class VirtualClock implements LimiterClock {
  t = 1_000_000;
  readonly waits: number[] = [];
  now(): number {
    return this.t;
  }
  async sleep(ms: number): Promise<void> {
    this.waits.push(ms);
    this.t += Math.max(0, ms);
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  faults: Record<string, unknown>,
  opts: { max429?: number; zone?: string } = {},
): Promise<{ emu: EmulatorHandle; fetcher: CrawlFetcher; clock: VirtualClock; page: () => Promise<unknown> }> {
  const emu = await startEmulator({
    apiKey: API_KEY,
    seed: 3,
    faults: { rules: [{ route: REQUEST_ROUTE, ...faults }] },
  });
  const client: ServiceClient = createClient({
    baseUrl: emu.url,
    apiKey: API_KEY,
    retry: { retries: 1, baseDelayMs: 10, maxDelayMs: 50 },
  });
  cleanups.push(
    () => emu.close(),
    () => client.close(),
  );
  const clock = new VirtualClock();
  const fetcher = new CrawlFetcher({
    client: async () => client,
    zone: opts.zone ?? 'serp_zone',
    format: 'raw',
    concurrency: 1,
    // Fast enough that the rate limiter's own spacing after a 429 (2 ms at the halved rate) never outlasts a page's
    // wait: every wait listed is the page's.
    perSecond: RATE,
    log: quietLogger(),
    clock,
    ...(opts.max429 !== undefined && { max429: opts.max429 }),
  });
  const state = new MemoryStateStore();
  const ctx = {
    signal: new AbortController().signal,
    log: quietLogger(),
    state,
    paid: PaidLedger.open(state, 1),
    counters: { records: 0, bytes: 0, retries: 0, deadLetters: 0 },
    deadLetter: () => undefined,
    baseDir: '.',
    dryRun: false,
  };
  return { emu, fetcher, clock, page: () => fetcher.page(URL, ctx, { for: 'search page', key: 'p1' }) };
}

describe('CrawlFetcher retries', () => {
  it('a 429 with Retry-After: requested again through the rate limiter after the client’s wait for it', async () => {
    const s = await setup({ rate: 1, faults: { '429_retry_after': 1 }, retry_after_s: 7, max_per_route: 1 });
    await expect(s.page()).resolves.toMatchObject({ bytes: expect.any(Number) });
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(2);
    expect(s.fetcher.rate.rate(s.clock.now())).toBeLessThan(RATE); // the crawl slowed down
    // The Retry-After (7 s), capped by the client's max_delay_ms (50 ms here): the pipeline's retry timing.
    expect(s.clock.waits).toEqual([50]);
  });

  it('429s without Retry-After: a backoff that grows with each 429 of the page (base_delay_ms, doubling)', async () => {
    const s = await setup({ rate: 1, faults: { '429': 1 }, max_per_route: 3 });
    await s.page();
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(4);
    // The page's k-th wait is base × 2^(k-1) with half of it jittered (base_delay_ms 10): a page requested again
    // does not start over from the first wait.
    expect(s.clock.waits).toHaveLength(3);
    s.clock.waits.forEach((w, k) => expect(w).toSatisfy((x: number) => x >= 5 * 2 ** k && x <= 10 * 2 ** k));
  });

  it('a 429 given as a 200 with x-brd-status-code (a throttled zone) is the same 429: slowed down, waited, asked again', async () => {
    const s = await setup({ rate: 1, faults: { sr_rate_limit: 1 }, max_per_route: 1, throttle_s: 0.001 });
    await expect(s.page()).resolves.toMatchObject({ bytes: expect.any(Number) });
    expect(s.emu.stats.faults.sr_rate_limit).toBe(1);
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(2);
    expect(s.fetcher.rate.rate(s.clock.now())).toBeLessThan(RATE);
    expect(s.clock.waits).toHaveLength(1);
  });

  it('after max429 tries the page fails with the service’s 429 (the client’s own retries spent last)', async () => {
    const s = await setup({ rate: 1, faults: { '429': 1 } }, { max429: 3 });
    const err = await s.page().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).status).toBe(429);
    // Two requeues, then the third try with its one client retry.
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(4);
    expect(s.clock.waits).toHaveLength(2);
  });

  it('a 5xx is retried by the client, without telling the rate limiter', async () => {
    const s = await setup({ rate: 1, faults: { '503': 1 }, max_per_route: 1 });
    await s.page();
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(2);
    expect(s.fetcher.rate.rate(s.clock.now())).toBe(RATE); // no slow-down
    expect(s.clock.waits).toEqual([]);
  });

  it('a zone of the wrong type ends the crawl: the first refusal names it, later pages fail with it unsent', async () => {
    const s = await setup({ rate: 0, faults: { '429': 1 } }, { zone: 'static_zone' });
    const first = await s.page().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ServiceError);
    expect((first as ServiceError).message).toMatch(/403: client_10090: zone "static_zone" .* serp or unblocker/);
    expect(await s.page().catch((e: unknown) => e)).toBe(first);
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(1);
  });

  it('a terminal answer fails the page at once: an unknown zone is named with its option', async () => {
    const s = await setup({ rate: 0, faults: { '429': 1 } }, { zone: 'no_such_zone' });
    const err = await s.page().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/^zone "no_such_zone" does not exist/);
    expect((err as SluiceError).hint).toMatch(/source\.zone/);
    expect((err as SluiceError).cause).toMatchObject({ status: 400, transient: false });
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(1);
  });
});
