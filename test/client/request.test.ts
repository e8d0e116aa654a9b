/** `POST /request` through `createClient`: payloads, errors hidden in headers of a 200, and its retry behaviour. */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceError, createClient, type ServiceClient } from '../../src/client/index.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const ROUTE = 'POST /request';
const SEARCH = 'https://www.google.com/search?q=espresso+machines&brd_json=1';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function clientFor(baseUrl: string, retries = 3): { c: ServiceClient; delays: number[] } {
  const delays: number[] = [];
  const c = createClient({
    baseUrl,
    apiKey: 'emulator-key',
    retry: { retries, baseDelayMs: 5, maxDelayMs: 50 },
    onRetry: (i) => delays.push(i.delayMs),
  });
  cleanups.push(() => c.close());
  return { c, delays };
}

async function emulator(faults?: unknown): Promise<EmulatorHandle> {
  const e = await startEmulator({ seed: 6, faults });
  cleanups.push(() => e.close());
  return e;
}

/** A real server answering every request with `answer`; counts what it received. */
async function scripted(
  answer: (res: ServerResponse, hit: number) => void,
): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    req.resume().on('end', () => answer(res, ++hits));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

type Obj = Record<string, any>;

describe('payloads', () => {
  it('raw: the structured page itself, with its size and fetch time', async () => {
    const e = await emulator();
    const { c } = clientFor(e.url);
    const before = Date.now();
    const out = await c.request.page({ zone: 'serp_zone', url: SEARCH });
    const page = out.payload as Obj;
    expect(page.general.query).toBe('espresso machines');
    expect(Array.isArray(page.organic)).toBe(true);
    expect(out.bytes).toBe(Buffer.byteLength(JSON.stringify(page)));
    // The service's time (its Date header, whole seconds), not this machine's.
    expect(out.fetchedAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(out.fetchedAt.getTime() % 1000).toBe(0);
  });

  it('json: the envelope {status_code, headers, body} is unwrapped to the same page', async () => {
    const e = await emulator();
    const { c } = clientFor(e.url);
    const raw = (await c.request.page({ zone: 'serp_zone', url: SEARCH })).payload as Obj;
    const wrapped = (await c.request.page({ zone: 'serp_zone', url: SEARCH, format: 'json' })).payload as Obj;
    expect(wrapped.organic).toEqual(raw.organic);
  });

  it('without brd_json=1 the page is HTML text', async () => {
    const e = await emulator();
    const { c } = clientFor(e.url);
    const out = await c.request.page({ zone: 'serp_zone', url: 'https://www.google.com/search?q=tea' });
    expect(out.payload).toMatch(/^<!doctype html>/);
  });
});

describe('errors', () => {
  it('x-brd-error on an HTTP 200: an error with the service message, code and target status; not retried', async () => {
    const e = await emulator();
    const { c, delays } = clientFor(e.url);
    const err = (await c.request
      .page({ zone: 'serp_zone', url: 'https://www.google.com/search?brd_json=1' })
      .catch((x: unknown) => x)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({
      status: 400,
      code: 'http_status',
      // The code leads the message: it is what the user looks up.
      serviceMessage: 'http_status: the search URL has no q parameter',
    });
    expect(delays).toEqual([]);
    expect(e.stats.routes[ROUTE]).toBe(1);
  });

  it('a zone of the wrong kind: 403 with x-brd-err-code client_10090 and its message', async () => {
    const e = await emulator();
    const { c } = clientFor(e.url);
    await expect(c.request.page({ zone: 'static_zone', url: SEARCH })).rejects.toMatchObject({
      status: 403,
      code: 'client_10090',
      serviceMessage: expect.stringMatching(/static_zone.*SERP zone/),
    });
    expect(e.stats.routes[ROUTE]).toBe(1);
  });

  it('an unknown zone: the plain-text 400 body is the message', async () => {
    const e = await emulator();
    const { c } = clientFor(e.url);
    await expect(c.request.page({ zone: 'nope', url: SEARCH })).rejects.toMatchObject({
      status: 400,
      serviceMessage: 'zone "nope" not found',
    });
  });

  it('an empty 200 with no error header is a failure, never "no results"', async () => {
    const s = await scripted((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end();
    });
    const { c, delays } = clientFor(s.url, 2);
    const err = (await c.request.page({ zone: 'z', url: SEARCH }).catch((x: unknown) => x)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.serviceMessage).toMatch(/empty answer with HTTP 200/);
    // Treated as a failed (unbilled) request: retried like a 502, then reported.
    expect(delays).toHaveLength(2);
    expect(s.hits()).toBe(3);
  });

  it('only x-brd-err-code on an empty 200 (e.g. ip_blacklisted): the code is reported', async () => {
    const s = await scripted((res) => {
      res.writeHead(200, { 'x-brd-err-code': 'ip_blacklisted' });
      res.end();
    });
    const { c } = clientFor(s.url, 0);
    await expect(c.request.page({ zone: 'z', url: SEARCH })).rejects.toMatchObject({
      code: 'ip_blacklisted',
      serviceMessage: expect.stringContaining('ip_blacklisted'),
    });
  });

  it('format json whose envelope says the target answered 404: an error with that status', async () => {
    const s = await scripted((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status_code: 404, headers: {}, body: 'not here' }));
    });
    const { c } = clientFor(s.url, 0);
    await expect(c.request.page({ zone: 'z', url: SEARCH, format: 'json' })).rejects.toMatchObject({
      status: 404,
      serviceMessage: 'the target answered 404',
    });
    expect(s.hits()).toBe(1);
  });
});

describe('errors that fail the same way every time fail at once, with the service’s code (docs/service.md §5.6)', () => {
  it('unexpected_q: a query longer than the engine reads', async () => {
    const e = await emulator();
    const { c, delays } = clientFor(e.url);
    const words = Array.from({ length: 33 }, (_, i) => `w${i}`).join('+');
    const err = (await c.request
      .page({ zone: 'serp_zone', url: `https://www.google.com/search?q=${words}&brd_json=1` })
      .catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 502, code: 'unexpected_q', transient: false });
    expect(err.message).toMatch(/502: unexpected_q: /);
    expect(err.hint).toMatch(/shorten the query/);
    expect(delays).toEqual([]);
    expect(e.stats.routes[ROUTE]).toBe(1);
  });

  it('no_peers', async () => {
    const e = await emulator({ rules: [{ route: ROUTE, rate: 1, faults: { no_peers: 1 } }] });
    const { c, delays } = clientFor(e.url);
    const err = (await c.request.page({ zone: 'serp_zone', url: SEARCH }).catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 502, code: 'no_peers', transient: false });
    expect(err.hint).toMatch(/country or targeting/);
    expect(delays).toEqual([]);
    expect(e.stats.faults.no_peers).toBe(1);
  });
});

describe('retries (a page is billed only when it succeeds, so /request is not a paid call)', () => {
  it.each(['429', '500', '502', '503', 'reset_before', 'reset'])('%s is retried and the page arrives', async (kind) => {
    const e = await emulator({ rules: [{ route: ROUTE, rate: 1, faults: { [kind]: 1 }, max_per_route: 1 }] });
    const { c } = clientFor(e.url);
    const seen: { status: number; reason: string }[] = [];
    const out = await c.request.page({ zone: 'serp_zone', url: SEARCH }, { onRetry: (i) => seen.push(i) });
    expect((out.payload as Obj).general.query).toBe('espresso machines');
    expect(e.stats.routes[ROUTE]).toBe(2);
    // The per-call hook sees the status, so a crawl can slow down on 429s only.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.status).toBe(kind.startsWith('reset') ? 0 : Number(kind));
  });

  it('a 429 with Retry-After is waited out for the page too', async () => {
    const e = await emulator({
      rules: [{ route: ROUTE, rate: 1, faults: { '429_retry_after': 1 }, max_per_route: 1, retry_after_s: 0 }],
    });
    const { c, delays } = clientFor(e.url);
    await c.request.page({ zone: 'serp_zone', url: SEARCH });
    expect(delays).toEqual([0]);
  });
});

describe('a page is billed', () => {
  it('watchers are told POST /request is paid, though it is safe to retry; a free call is not', async () => {
    const e = await emulator();
    const told: [string, boolean][] = [];
    const c = createClient({
      baseUrl: e.url,
      apiKey: 'emulator-key',
      onCall: (call) => void told.push([`${call.method} ${call.path}`, call.paid]),
    });
    cleanups.push(() => c.close());
    await c.request.page({ zone: 'serp_zone', url: SEARCH });
    await c.zones.active();
    expect(told).toEqual([
      ['POST /request', true],
      ['GET /zone/get_active_zones', false],
    ]);
  });
});
