/**
 * A crawl against a zone the service throttles (docs/service.md §5.6, `sr_rate_limit`): for ten seconds every page
 * request is answered HTTP 200 with `x-brd-status-code: 429`. The client reads that real status first, so the one 429
 * budget counts each answer and holds every request after it (longer with each 429 in a row), the crawl's rate
 * limiter slows down and keeps its interval, and each page asked again waits longer each time. So the throttle costs
 * a handful of requests, not one every few hundred milliseconds per page in flight (108–110 in ten seconds before),
 * and every page is loaded once it is over.
 *
 * Emulated time runs five times faster (the ten seconds pass in two); sluice's waits are real, with the default retry
 * timing of `service.retry`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ServiceClient } from '../../../src/client/index.js';
import type { ComponentDeps } from '../../../src/contracts/component.js';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server.js';
import { serpSchema, serpSource } from '../../../src/sources/serp.js';
import { driveCrawl } from '../../support/drive-crawl.js';
import { API_KEY, REQUEST_ROUTE, quietLogger, sourceContext } from '../crawl-harness.js';

const SEED = 5;
const QUERIES = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon', 'tea shops kyoto', 'bakeries oslo'];
const THROTTLE_S = 10;

interface Service {
  emu: EmulatorHandle;
  client: ServiceClient;
  deps: ComponentDeps;
}

const services: Service[] = [];
async function service(faults?: unknown): Promise<Service> {
  const emu = await startEmulator({
    apiKey: API_KEY,
    seed: SEED,
    timeScale: 5,
    ...(faults !== undefined && { faults }),
  });
  // The defaults of `service.retry`: first wait 500 ms, at most 30 s.
  const client = createClient({ baseUrl: emu.url, apiKey: API_KEY });
  const s = { emu, client, deps: { log: quietLogger(), baseDir: '.', client: async () => client } };
  services.push(s);
  return s;
}
afterAll(async () => {
  for (const s of services) {
    await s.client.close();
    await s.emu.close();
  }
});

async function crawl(s: Service): Promise<Awaited<ReturnType<typeof driveCrawl>>> {
  const cfg = serpSchema.parse({ type: 'serp', zone: 'serp_zone', queries: QUERIES, max_pages: 3, concurrency: 8 });
  return driveCrawl(serpSource.create(cfg, s.deps), sourceContext({ deps: s.deps, baseDir: '.' }), { concurrency: 8 });
}

describe('a zone throttled for 10 s (200 with x-brd-status-code: 429)', () => {
  let clean: string[];
  beforeAll(async () => {
    clean = (await crawl(await service())).committed.sort();
  });

  it('costs a handful of requests, each counted by the 429 budget, and every page loads after', async () => {
    const s = await service({
      rules: [
        { route: REQUEST_ROUTE, rate: 1, max_per_route: 1, faults: { sr_rate_limit: 1 }, throttle_s: THROTTLE_S },
      ],
    });
    const result = await crawl(s);
    expect(result.error).toBeUndefined();

    const throttled = s.emu.stats.faults.sr_rate_limit ?? 0;
    // The first wave of the slow start (4 requests) meets the throttle; the hold after their 429s outlasts it.
    expect(throttled).toBeGreaterThan(0);
    expect(throttled).toBeLessThanOrEqual(8);
    expect(s.client.answers429()).toEqual({ inWindow: throttled, total: throttled });
    // Far from the service's IP block, which counts them too.
    expect(s.emu.ipBlock.view(s.emu.ctx.clock.now()).ips['127.0.0.1']?.blocked ?? false).toBe(false);

    // Every page of the clean crawl, each once, and no request beyond them but the throttled ones.
    expect(result.committed.sort()).toEqual(clean);
    expect(s.emu.stats.routes[REQUEST_ROUTE]).toBe(clean.length + throttled);
  });
});
