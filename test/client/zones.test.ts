/** The zone calls through `createClient`, against the emulator (and one scripted server for a plain-text success). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AmbiguousPaidCallError,
  ServiceError,
  costPeriodProblem,
  createClient,
  type ServiceClient,
} from '../../src/client/index.js';
import { EXIT_CODES } from '../../src/core/errors.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(faults?: unknown): Promise<{ e: EmulatorHandle; c: ServiceClient; retries: number[] }> {
  const e = await startEmulator({ seed: 4, faults });
  const retries: number[] = [];
  const c = createClient({
    baseUrl: e.url,
    apiKey: 'emulator-key',
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 50 },
    onRetry: (i) => retries.push(i.delayMs),
  });
  cleanups.push(
    () => e.close(),
    () => c.close(),
  );
  return { e, c, retries };
}

function oneFault(route: string, kind: string, extra: Record<string, unknown> = {}): unknown {
  return { rules: [{ route, rate: 1, faults: { [kind]: 1 }, max_per_route: 1, ...extra }] };
}

const NEW_ZONE = { zone: { name: 'new_serp', type: 'serp' }, plan: { type: 'serp' } };

describe('zone calls', () => {
  it('create, list, cost, refresh IPs, remove a domain, countries', async () => {
    const { e, c } = await setup();
    expect(await c.zones.create(NEW_ZONE)).toEqual({ name: 'new_serp', type: 'serp' });
    expect(await c.zones.active()).toContainEqual({ name: 'new_serp', type: 'serp' });

    const cost = await c.zones.cost('static_zone');
    const [customer] = Object.keys(cost);
    expect(Object.keys(cost[customer!]!)).toEqual(['back_m2', 'back_m1', 'back_m0', 'back_d2', 'back_d1', 'back_d0']);
    const custom = await c.zones.cost('static_zone', { from: '2026-01-01', to: '2026-01-08' });
    expect(Object.keys(custom[customer!]!)).toEqual(['custom']);

    const refreshed = (await c.zones.refreshIps({ zone: 'static_zone' })) as { ips: string[]; new_ips: string[] };
    expect(refreshed.new_ips).toHaveLength(3);
    expect(refreshed.ips).toEqual(refreshed.new_ips);
    expect(await c.zones.removeDomain({ zone: 'static_zone', type: 'whitelist', domain: 'example.com' })).toEqual({
      whitelist: 'shop.example.org api.example.net',
    });
    expect(Object.keys((await c.zones.countries()).zone_types)).toHaveLength(6);
    expect(e.stats.paid).toEqual({ zone_create: 1, ip_refresh: 1, domain_perm: 1 });
  });

  it('the service errors come through with status, message and validation details', async () => {
    const { e, c, retries } = await setup();
    await c.zones.create(NEW_ZONE);
    await expect(c.zones.create(NEW_ZONE)).rejects.toMatchObject({
      status: 409,
      serviceMessage: 'Zone "new_serp" already exists',
    });
    const invalid = (await c.zones
      .create({ zone: { name: 'x y', type: 'serp' }, plan: { ips: 'three' } })
      .catch((x: unknown) => x)) as ServiceError;
    expect(invalid).toBeInstanceOf(ServiceError);
    expect(invalid.status).toBe(400);
    expect(invalid.code).toBe('validation');
    expect(invalid.details.join(' ')).toMatch(/zone\.name.*plan\.ips|plan\.ips.*zone\.name/);
    await expect(c.zones.cost('nope')).rejects.toMatchObject({ status: 422, serviceMessage: 'zone "nope" not found' });
    await expect(c.zones.refreshIps({ zone: 'static_zone', country: 'US' })).rejects.toMatchObject({ status: 400 });
    // 4xx: nothing was retried, nothing charged beyond the one zone.
    expect(retries).toEqual([]);
    expect(e.stats.paid).toEqual({ zone_create: 1 });
  });

  it("an impossible period: the service's 500 is a configuration error, not retried, not blamed on the service", async () => {
    const { e, c, retries } = await setup();
    const err = (await c.zones
      .cost('static_zone', { from: '2026-02-30', to: '2026-03-01' })
      .catch((x: unknown) => x)) as ServiceError;
    expect(err.status).toBe(500);
    expect(err.serviceMessage).toMatch(/^You must provide period with both to and from/);
    expect(err.transient).toBe(false);
    expect(err.exitCode).toBe(EXIT_CODES.config);
    expect(err.hint).toMatch(/real calendar days/);
    expect(retries).toHaveLength(0);
    expect(e.stats.routes['GET /zone/cost']).toBe(1);
  });

  it('costPeriodProblem catches what the service would answer with a 500, before asking', () => {
    expect(costPeriodProblem('2026-02-01', '2026-03-01')).toBeUndefined();
    expect(costPeriodProblem('2026-02-30', '2026-03-01')).toMatch(/^from "2026-02-30" is not a calendar day/);
    expect(costPeriodProblem('2026-02-01', '2026-13-01')).toMatch(/^to "2026-13-01"/);
    expect(costPeriodProblem('01/02/2026', '2026-03-01')).toMatch(/YYYY-MM-DD/);
    expect(costPeriodProblem('2026-03-02', '2026-03-01')).toMatch(/after/);
  });
});

describe('account-changing calls under faults', () => {
  it.each([
    ['create', 'POST /zone', (c: ServiceClient) => c.zones.create(NEW_ZONE)],
    ['refresh', 'POST /zone/ips/refresh', (c: ServiceClient) => c.zones.refreshIps({ zone: 'static_zone' })],
    [
      'remove domain',
      'DELETE /zone/domain_perm',
      (c: ServiceClient) => c.zones.removeDomain({ zone: 'static_zone', type: 'blacklist', domain: 'ads.example.com' }),
    ],
  ])('%s: not repeated after 500, 502, 503 or a reset', async (_name, route, run) => {
    for (const kind of ['500', '502', '503', 'reset_before', 'reset_after']) {
      const { e, c, retries } = await setup(oneFault(route, kind));
      await expect(run(c)).rejects.toBeInstanceOf(AmbiguousPaidCallError);
      expect(e.stats.routes[route]).toBe(1);
      expect(retries).toEqual([]);
      // Only a fault after the handler leaves the change made (once).
      expect(Object.values(e.stats.paid).reduce((a, b) => a + b, 0)).toBe(kind === 'reset_after' ? 1 : 0);
    }
  });

  it.each([
    ['create', 'POST /zone', (c: ServiceClient) => c.zones.create(NEW_ZONE)],
    ['refresh', 'POST /zone/ips/refresh', (c: ServiceClient) => c.zones.refreshIps({ zone: 'static_zone' })],
    [
      'remove domain',
      'DELETE /zone/domain_perm',
      (c: ServiceClient) => c.zones.removeDomain({ zone: 'static_zone', type: 'whitelist', domain: 'example.com' }),
    ],
  ])('%s: retried after a 429 and done exactly once', async (_name, route, run) => {
    for (const kind of ['429', '429_retry_after']) {
      const { e, c, retries } = await setup(oneFault(route, kind, { retry_after_s: 0 }));
      await run(c);
      expect(e.stats.routes[route]).toBe(2);
      expect(retries).toHaveLength(1);
      expect(Object.values(e.stats.paid)).toEqual([1]);
    }
  });

  it('a zone created with a plain-text success answer ("Zone added", as older docs show) is a success', async () => {
    let hits = 0;
    const server = createServer((req, res) => {
      hits++;
      req.resume().on('end', () => {
        res.writeHead(201, { 'content-type': 'text/html; charset=utf-8' });
        res.end('Zone added');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const c = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'k-123' });
    cleanups.push(() => c.close());
    await expect(c.zones.create(NEW_ZONE)).resolves.toBe('Zone added');
    expect(hits).toBe(1);
  });
});
