/**
 * The client's one retry policy, against the real emulator (fault injection) and scripted servers: 429 waits the
 * Retry-After or backs off, 5xx and network failures on GETs are retried, 4xx never is.
 */
import { describe, expect, it } from 'vitest';
import { BlockedIpError, ServiceError, type ServiceClient } from '../../src/client/index.js';
import { isTransient } from '../../src/core/retry.js';

import { COUNTRIES, client, closeAfterEach, emulator, faultsOn, scripted, send } from './http-helpers.js';

closeAfterEach();

describe('429', () => {
  it('waits exactly the Retry-After, then succeeds', async () => {
    const e = await emulator(faultsOn(COUNTRIES, '429_retry_after', 1, { retry_after_s: 1 }));
    // A backoff would be far longer than the Retry-After: the delay seen can only come from the header.
    const { c, retries } = client(e.url, { retry: { retries: 3, baseDelayMs: 60_000, maxDelayMs: 120_000 } });
    const out = await c.zones.countries();
    expect(out.zone_types.DC_shared?.country_codes.length).toBeGreaterThan(0);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, delayMs: 1_000, method: 'GET', path: '/countrieslist' });
    expect(retries[0]!.reason).toMatch(/^429 /);
    expect(e.stats.routes[COUNTRIES]).toBe(2);
  });

  it('a Retry-After longer than maxDelayMs is capped', async () => {
    const e = await emulator(faultsOn(COUNTRIES, '429_retry_after', 1, { retry_after_s: 100 }));
    const { c, retries } = client(e.url, { retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 50 } });
    await c.zones.countries();
    expect(retries.map((r) => r.delayMs)).toEqual([50]);
  });

  it('Retry-After as an HTTP date is honoured (capped)', async () => {
    const s = await scripted((_req, res, hit) =>
      hit === 1
        ? send(res, 429, { error: 'slow down' }, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() })
        : send(res, 200, { zone_types: {} }),
    );
    const { c, retries } = client(s.url, { retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 200 } });
    await c.zones.countries();
    expect(retries.map((r) => r.delayMs)).toEqual([200]);
  });

  it('without Retry-After: exponential backoff with jitter, each wait within [½, 1] × base × 2^n, capped', async () => {
    const e = await emulator(faultsOn(COUNTRIES, '429', 5));
    const { c, retries } = client(e.url, { retry: { retries: 5, baseDelayMs: 8, maxDelayMs: 50 } });
    await c.zones.countries();
    expect(retries.map((r) => r.attempt)).toEqual([1, 2, 3, 4, 5]);
    retries.forEach((r, n) => {
      const nominal = Math.min(50, 8 * 2 ** n);
      expect(r.delayMs).toBeGreaterThanOrEqual(nominal / 2);
      expect(r.delayMs).toBeLessThanOrEqual(nominal);
    });
    // Jitter: the waits are not the bare powers of two.
    const ratios = retries.map((r, n) => r.delayMs / Math.min(50, 8 * 2 ** n));
    expect(new Set(ratios).size).toBeGreaterThan(1);
    expect(e.stats.routes[COUNTRIES]).toBe(6);
  });

  it('gives up after `retries`, with the service error', async () => {
    const e = await emulator(faultsOn(COUNTRIES, '429', 100));
    const { c, retries } = client(e.url, { retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 5 } });
    const err = await c.zones.countries().catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ status: 429, serviceMessage: 'Too many requests' });
    expect(retries).toHaveLength(2);
    expect(e.stats.routes[COUNTRIES]).toBe(3);
  });
});

describe('5xx and network failures on GETs are retried', () => {
  it.each(['500', '502', '503'])('%s, then success', async (kind) => {
    const e = await emulator(faultsOn(COUNTRIES, kind, 2));
    const { c, retries } = client(e.url);
    await c.zones.countries();
    expect(retries.map((r) => r.reason.slice(0, 3))).toEqual([kind, kind]);
    expect(e.stats.routes[COUNTRIES]).toBe(3);
  });

  it.each([
    ['reset_before', 'connection dropped before an answer'],
    ['reset_after', 'connection dropped after the handler ran'],
    ['reset', 'connection dropped in the middle of the body'],
  ])('%s (%s), then success', async (kind) => {
    const e = await emulator(faultsOn(COUNTRIES, kind, 1));
    const { c, retries } = client(e.url);
    const out = await c.zones.countries();
    expect(Object.keys(out.zone_types)).toHaveLength(6);
    expect(retries).toHaveLength(1);
    expect(e.stats.faults[kind]).toBe(1);
    expect(e.stats.routes[COUNTRIES]).toBe(2);
  });

  it.each([
    ['GET /zone/get_active_zones', (c: ServiceClient) => c.zones.active()],
    ['GET /countrieslist', (c: ServiceClient) => c.zones.countries()],
    ['GET /datasets/list', (c: ServiceClient) => c.datasets.list()],
  ])('a 200 whose JSON ends early, cleanly (%s): cut short, retried, then the answer', async (route, call) => {
    const e = await emulator(faultsOn(route, 'truncated_json', 1));
    const { c, retries } = client(e.url);
    await expect(call(c)).resolves.toBeDefined();
    expect(e.stats.faults.truncated_json).toBe(1);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.reason).toMatch(/cut short/);
  });

  it('a cut-short answer on every try: a transient network failure, not a wrong base_url', async () => {
    const s = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[{"name":"serp_zone","type":"se');
    });
    const { c } = client(s.url, { retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    const err = (await c.zones.active().catch((x: unknown) => x)) as ServiceError;
    expect(err.status).toBe(0);
    expect(err.serviceMessage).toMatch(/cut short.*the JSON stops after 31 bytes/);
    expect(isTransient(err)).toBe(true);
    expect(err.hint).not.toMatch(/base_url/);
    expect(s.hits).toHaveLength(3);
  });

  it('a download that fails with 503 before its body is retried too', async () => {
    const s = await scripted((_req, res, hit) =>
      hit === 1 ? send(res, 503, { error: 'busy' }) : send(res, 200, '[{"a":1}]'),
    );
    const { c, retries } = client(s.url);
    const dl = await c.deepLookup.download('ai_x', 'json');
    expect(Buffer.concat(await dl.body.toArray()).toString()).toBe('[{"a":1}]');
    expect(retries).toHaveLength(1);
    expect(s.hits).toEqual([
      'GET /datasets/deep_lookup/v1/request/ai_x/download?format=json',
      'GET /datasets/deep_lookup/v1/request/ai_x/download?format=json',
    ]);
  });
});

describe('4xx is never retried', () => {
  it.each([
    ['400 missing zone', '/zone/cost', 400],
    ['422 unknown zone', '/zone/cost?zone=nope', 422],
  ])('%s: one request at the server', async (_name, _path, status) => {
    const e = await emulator();
    const { c, retries } = client(e.url);
    const err = await c.zones.cost(status === 400 ? '' : 'nope').catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).status).toBe(status);
    expect(retries).toHaveLength(0);
    expect(e.stats.routes['GET /zone/cost']).toBe(1);
  });

  it('401 for a wrong key: one request, plain-text reason, a hint about the key', async () => {
    const e = await emulator();
    const { c, retries } = client(e.url, { apiKey: 'not-the-key' });
    const err = (await c.zones.countries().catch((x: unknown) => x)) as ServiceError;
    expect(err.status).toBe(401);
    expect(err.serviceMessage).toBe('Invalid credentials');
    expect(err.hint).toMatch(/API key/);
    expect(retries).toHaveLength(0);
  });

  it.each([400, 402, 404, 409, 422])('%i from a scripted server: one request', async (status) => {
    const s = await scripted((_req, res) => send(res, status, { error: `no (${status})` }));
    const { c, retries } = client(s.url);
    await expect(c.datasets.list()).rejects.toMatchObject({ status, serviceMessage: `no (${status})` });
    expect(retries).toHaveLength(0);
    expect(s.hits).toHaveLength(1);
  });

  it('403 where GET /status is answered: the key lacks permission (one look at /status, no retry)', async () => {
    const s = await scripted((req, res) =>
      req.url === '/status' ? send(res, 200, { status: 'active' }) : send(res, 403, 'Access denied.'),
    );
    const { c, retries } = client(s.url);
    const err = (await c.datasets.list().catch((x: unknown) => x)) as ServiceError;
    expect(err).not.toBeInstanceOf(BlockedIpError);
    expect(err).toMatchObject({ status: 403, serviceMessage: 'Access denied.', transient: false });
    expect(err.hint).toMatch(/lacks permission/);
    expect(retries).toHaveLength(0);
    expect(s.hits).toEqual(['GET /datasets/list', 'GET /status']);
  });

  it('403 on every call, GET /status too: the IP is blocked, named so, with what to do', async () => {
    const s = await scripted((_req, res) => send(res, 403, 'Access denied.'));
    const { c, retries } = client(s.url);
    const err = (await c.datasets.list().catch((x: unknown) => x)) as BlockedIpError;
    expect(err).toBeInstanceOf(BlockedIpError);
    expect(err.transient).toBe(false);
    expect(err.message).toMatch(/refuses this IP on every call.*blocked.*25 answers of 429 within 5 minutes/);
    expect(err.hint).toMatch(/support/);
    expect(err.hint).not.toMatch(/permission/);
    expect(retries).toHaveLength(0);
    expect(s.hits).toEqual(['GET /datasets/list', 'GET /status']);
  });
});
