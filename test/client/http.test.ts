/**
 * The client's one retry policy and error reading, against the real emulator (fault injection) and, for response
 * shapes the emulator never produces, small scripted node:http servers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AmbiguousPaidCallError,
  BlockedIpError,
  NotReadyError,
  ServiceError,
  createClient,
  type ClientOptions,
  type ServiceClient,
} from '../../src/client/index.js';
import { NetworkError } from '../../src/core/errors.js';
import { isTransient } from '../../src/core/retry.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const KEY = 'emulator-key';
type RetryInfo = Parameters<NonNullable<ClientOptions['onRetry']>>[0];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function client(baseUrl: string, opts: Partial<ClientOptions> = {}): { c: ServiceClient; retries: RetryInfo[] } {
  const retries: RetryInfo[] = [];
  const c = createClient({
    baseUrl,
    apiKey: KEY,
    retry: { retries: 5, baseDelayMs: 10, maxDelayMs: 1_000 },
    onRetry: (i) => retries.push(i),
    ...opts,
  });
  cleanups.push(() => c.close());
  return { c, retries };
}

async function emulator(faults?: unknown): Promise<EmulatorHandle> {
  const e = await startEmulator({ seed: 2, faults });
  cleanups.push(() => e.close());
  return e;
}

/** One fault rule on one route: `n` faults of `kind`, then normal answers. */
function faultsOn(route: string, kind: string, n: number, extra: Record<string, unknown> = {}): unknown {
  return { rules: [{ route, rate: 1, faults: { [kind]: 1 }, max_per_route: n, ...extra }] };
}

const COUNTRIES = 'GET /countrieslist';

type Script = (req: IncomingMessage, res: ServerResponse, hit: number, body: string) => void | Promise<void>;

/** A real HTTP server answering by script; `hits` lists `METHOD path` of every request it received. */
async function scripted(script: Script, port = 0): Promise<{ url: string; hits: string[]; server: Server }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push(`${req.method} ${req.url}`);
      void Promise.resolve(script(req, res, hits.length, Buffer.concat(chunks).toString())).catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, server };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const type = typeof body === 'string' ? 'text/html; charset=utf-8' : 'application/json';
  res.writeHead(status, { 'content-type': type, ...headers });
  res.end(text);
}

/** Drops the connection after the request arrived, without any answer. */
function reset(res: ServerResponse): void {
  res.socket?.destroy();
}

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

/** Every call that starts paid or account-changing work, through the public client. */
const PAID_CALLS: [string, (c: ServiceClient) => Promise<unknown>][] = [
  ['filter (json)', (c) => c.datasets.filter({ dataset_id: 'gd_x', filter: { name: 'a', operator: '=', value: '1' } })],
  [
    'filter (multipart)',
    (c) =>
      c.datasets.filter({
        dataset_id: 'gd_x',
        filter: { name: 'a', operator: 'in', value: 'a.csv' },
        files: [{ name: 'a.csv', content: 'a\n1\n' }],
      }),
  ],
  ['deep lookup trigger', (c) => c.deepLookup.trigger({ preview_id: 'dld_x', result_limit: 5 })],
  ['deep lookup enrich', (c) => c.deepLookup.enrich('ai_x', [{ column_name: 'ceo', query: 'CEO' }])],
  ['zone create', (c) => c.zones.create({ zone: { name: 'z', type: 'serp' }, plan: { type: 'serp' } })],
  ['IP refresh', (c) => c.zones.refreshIps({ zone: 'z' })],
  ['domain removal', (c) => c.zones.removeDomain({ zone: 'z', type: 'whitelist', domain: 'a.com' })],
];

describe('paid and account-changing calls', () => {
  for (const [name, run] of PAID_CALLS) {
    describe(name, () => {
      it.each([
        ['500', (res: ServerResponse) => send(res, 500, { error: 'Internal error.' })],
        ['502', (res: ServerResponse) => send(res, 502, 'Bad gateway')],
        ['reset', reset],
      ])('is not repeated after %s: one request, AmbiguousPaidCallError', async (_kind, fail) => {
        const s = await scripted((_req, res, hit) => (hit === 1 ? fail(res) : send(res, 200, { ok: true })));
        const { c, retries } = client(s.url);
        const err = await run(c).catch((x: unknown) => x);
        expect(err).toBeInstanceOf(AmbiguousPaidCallError);
        expect((err as AmbiguousPaidCallError).hint).toMatch(/before running it again/);
        // Terminal for every retry above the client too (the engine's unit retries): only a person may repeat it.
        expect(isTransient(err)).toBe(false);
        expect(s.hits).toHaveLength(1);
        expect(retries).toHaveLength(0);
      });

      it('is retried after a 429 (a refusal before any work)', async () => {
        const s = await scripted((_req, res, hit) =>
          hit === 1 ? send(res, 429, { error: 'Too many requests' }) : send(res, 200, { ok: true }),
        );
        const { c, retries } = client(s.url);
        await expect(run(c)).resolves.toEqual({ ok: true });
        expect(s.hits).toHaveLength(2);
        expect(retries).toHaveLength(1);
      });

      it('is retried when the connection is refused (the request never left)', async () => {
        // A port nobody listens on until the first retry is announced.
        const probe = await scripted(() => undefined);
        const port = Number(new URL(probe.url).port);
        await new Promise<void>((r) => probe.server.close(() => r()));
        let server: Awaited<ReturnType<typeof scripted>> | undefined;
        const started: Promise<unknown>[] = [];
        const { c, retries } = client(probe.url, {
          retry: { retries: 3, baseDelayMs: 200, maxDelayMs: 200 },
          onRetry: (i) => {
            retries.push(i);
            if (retries.length === 1)
              started.push(scripted((_req, res) => send(res, 200, { ok: true }), port).then((s) => (server = s)));
          },
        });
        await expect(run(c)).resolves.toEqual({ ok: true });
        await Promise.all(started);
        expect(retries[0]!.reason).toMatch(/ECONNREFUSED/);
        expect(server!.hits).toHaveLength(1);
      });
    });
  }

  it('a paid call on the emulator: a 500 before the handler and a reset after it are both one request', async () => {
    const e = await emulator({
      rules: [
        { route: 'POST /zone', rate: 1, faults: { '500': 1 }, max_per_route: 1 },
        { route: 'POST /zone/ips/refresh', rate: 1, faults: { reset_after: 1 }, max_per_route: 1 },
      ],
    });
    const { c } = client(e.url);
    await expect(
      c.zones.create({ zone: { name: 'paid_once', type: 'serp' }, plan: { type: 'serp' } }),
    ).rejects.toBeInstanceOf(AmbiguousPaidCallError);
    expect(e.stats.routes['POST /zone']).toBe(1);
    await expect(c.zones.refreshIps({ zone: 'static_zone' })).rejects.toBeInstanceOf(AmbiguousPaidCallError);
    expect(e.stats.routes['POST /zone/ips/refresh']).toBe(1);
    // The reset came after the handler: the refresh really happened once, and was not repeated.
    expect(e.stats.paid).toEqual({ ip_refresh: 1 });
  });
});

describe('every error shape surfaces the service message and code', () => {
  it.each([
    ['{error}', 404, { error: 'Snapshot not found' }, { serviceMessage: 'Snapshot not found' }],
    [
      '{error, error_code}',
      400,
      { error: 'Request validation failed', error_code: 'validation' },
      { serviceMessage: 'Request validation failed', code: 'validation' },
    ],
    [
      '{validation_errors}',
      400,
      {
        validation_errors: [
          '"format" must be one of [json, ndjson, jsonl, csv]',
          '"part" must be greater than or equal to 1',
        ],
      },
      {
        code: 'validation',
        details: ['"format" must be one of [json, ndjson, jsonl, csv]', '"part" must be greater than or equal to 1'],
        serviceMessage: expect.stringContaining('"part" must be greater than or equal to 1'),
      },
    ],
    [
      '{error: {code, message, details}}',
      404,
      { error: { code: 'REQUEST_NOT_FOUND', message: 'request ai_x not found', details: 'check the id' } },
      { code: 'REQUEST_NOT_FOUND', serviceMessage: 'request ai_x not found', details: ['check the id'] },
    ],
    ['plain-text 401', 401, 'User authentication is required', { serviceMessage: 'User authentication is required' }],
    ['plain-text 404', 404, 'snapshot not found', { serviceMessage: 'snapshot not found' }],
    [
      'kyc {error: {code, message, action}}',
      403,
      { error: { code: 'kyc_required', message: 'Verify your identity first', action: 'kyc' } },
      { code: 'kyc_required', serviceMessage: 'Verify your identity first' },
    ],
  ])('%s', async (_name, status, body, expected) => {
    const s = await scripted((_req, res) => send(res, status, body));
    const { c } = client(s.url);
    const err = (await c.datasets.snapshot('snap_x').catch((x: unknown) => x)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ status, method: 'GET', path: '/datasets/snapshots/snap_x', ...expected });
    expect(err.message).toContain(String(status));
    expect(err.message).toContain(err.serviceMessage);
    expect(err.hint).toBeTruthy();
    expect(s.hits).toHaveLength(1);
  });

  it('plain-text 202 on a snapshot download is NotReadyError with the service text', async () => {
    const s = await scripted((_req, res) => send(res, 202, 'Snapshot is building. Try again in a few minutes'));
    const { c } = client(s.url);
    const err = await c.datasets.download('snap_x', { format: 'jsonl' }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(NotReadyError);
    expect(err).toMatchObject({ status: 202, serviceMessage: 'Snapshot is building. Try again in a few minutes' });
    expect(s.hits).toHaveLength(1);
  });

  it('a 202 where an answer was expected is an error with the text, not retried', async () => {
    const s = await scripted((_req, res) => send(res, 202, 'Snapshot is building, try again in 10s'));
    const { c } = client(s.url);
    const err = (await c.datasets.snapshot('snap_x').catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 202, serviceMessage: 'Snapshot is building, try again in 10s' });
    expect(err.hint).toMatch(/wait/);
    expect(s.hits).toHaveLength(1);
  });

  it('a 200 whose body is not JSON says so and points at base_url', async () => {
    const s = await scripted((_req, res) => send(res, 200, '<html>login</html>'));
    const { c } = client(s.url);
    const err = (await c.datasets.list().catch((x: unknown) => x)) as ServiceError;
    expect(err.serviceMessage).toMatch(/not JSON: <html>login/);
    expect(err.hint).toMatch(/base_url/);
  });

  it('network failure: status 0, the transport code, a hint to check base_url', async () => {
    const probe = await scripted(() => undefined);
    await new Promise<void>((r) => probe.server.close(() => r()));
    const { c } = client(probe.url, { retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    const err = (await c.datasets.list().catch((x: unknown) => x)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.status).toBe(0);
    expect(err.serviceMessage).toMatch(/ECONNREFUSED/);
    expect(err.hint).toMatch(/base_url/);
    // Typed for the retry decisions: provably never sent. A service never reached is terminal once the client's
    // few quick tries are spent (first-contact.test.ts); after it answered once, the same failure is transient.
    expect(err.cause).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ transient: false, sent: false });
    expect(err.message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+: /);
  });
});

describe('the API key never appears in errors', () => {
  const CANARY = 'canary-key-7f3a91c2e5';

  it('not in messages, details, hints, stacks or retry reasons, even when the server echoes it', async () => {
    const s = await scripted((req, res) => {
      const echoed = `you sent ${req.headers.authorization}`;
      if (req.url === '/datasets/list') return send(res, 400, { validation_errors: [echoed], error: echoed });
      if (req.url?.startsWith('/zone/cost'))
        return send(res, 500, { error: { code: 'X', message: echoed, details: echoed } });
      if (req.url === '/request')
        return send(res, 200, '', { 'x-brd-error': echoed, 'x-brd-err-code': 'client_10000' });
      if (req.url === '/countrieslist') return send(res, 401, `Invalid credentials ${req.headers.authorization}`);
      return reset(res);
    });
    const { c, retries } = client(s.url, { apiKey: CANARY, retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    const errors = [
      await c.datasets.list().catch((x: unknown) => x),
      await c.zones.cost('z').catch((x: unknown) => x),
      await c.request.page({ zone: 'z', url: 'https://www.google.com/search?q=x' }).catch((x: unknown) => x),
      await c.zones.countries().catch((x: unknown) => x),
      await c.datasets.snapshot('snap_x').catch((x: unknown) => x),
    ] as ServiceError[];
    // The server did see the key, and echoed it.
    expect(s.hits.length).toBeGreaterThanOrEqual(5);
    for (const err of errors) {
      expect(err).toBeInstanceOf(ServiceError);
      const text = [err.message, err.serviceMessage, err.details.join(' '), err.hint, err.stack, String(err)].join(
        '\n',
      );
      expect(text).not.toContain(CANARY);
    }
    expect(errors[0]!.serviceMessage).toContain('***');
    expect(retries.length).toBeGreaterThan(0);
    expect(JSON.stringify(retries)).not.toContain(CANARY);
  });
});

describe('downloads are streams', () => {
  /** Sends a first piece, then holds the rest back until the client has seen that piece (or 3 s passed). */
  async function holdingServer(): Promise<{ url: string; firstSeenBeforeEnd: () => boolean; seen: () => void }> {
    let seen!: () => void;
    const clientSaw = new Promise<void>((r) => (seen = r));
    let sawBeforeEnd = false;
    const s = await scripted(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/jsonl' });
      res.write(`${JSON.stringify({ i: 0, pad: 'x'.repeat(1000) })}\n`);
      const waited = await Promise.race([
        clientSaw.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 3_000)),
      ]);
      sawBeforeEnd = waited;
      // The rest: 8 MB that would have to sit in memory if the client buffered.
      const line = `${JSON.stringify({ i: 1, pad: 'y'.repeat(8_000) })}\n`;
      for (let i = 0; i < 1_000; i++) if (!res.write(line)) await new Promise((r) => res.once('drain', r));
      res.end();
    });
    return { url: s.url, firstSeenBeforeEnd: () => sawBeforeEnd, seen: () => seen() };
  }

  it.each([
    ['snapshot download', (c: ServiceClient) => c.datasets.download('snap_x', { format: 'jsonl' })],
    ['deep lookup download', (c: ServiceClient) => c.deepLookup.download('ai_x', 'json')],
  ])('%s: the first bytes arrive while the server is still writing', async (_name, start) => {
    const h = await holdingServer();
    const { c } = client(h.url);
    const dl = await start(c);
    expect(dl.status).toBe(200);
    let bytes = 0;
    for await (const chunk of dl.body as AsyncIterable<Buffer>) {
      if (bytes === 0) h.seen();
      bytes += chunk.length;
    }
    expect(h.firstSeenBeforeEnd()).toBe(true);
    expect(bytes).toBeGreaterThan(8_000_000);
  });
});

describe('a download that breaks while its body streams', () => {
  /** Writes a first piece of the body, then `then` (drops the connection, or goes silent). */
  async function cutting(then: (res: ServerResponse) => void): Promise<string> {
    const s = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/jsonl' });
      res.write('{"a":1}\n'.repeat(1000), () => setTimeout(() => then(res), 20));
    });
    return s.url;
  }

  async function readAll(body: AsyncIterable<Buffer>): Promise<{ bytes: number; error: unknown }> {
    let bytes = 0;
    try {
      for await (const c of body) bytes += c.length;
    } catch (error) {
      return { bytes, error };
    }
    throw new Error('the body did not fail');
  }

  it.each([
    ['the connection is dropped', 'UND_ERR_SOCKET', reset, {}],
    ['the server goes silent past the body timeout', 'UND_ERR_BODY_TIMEOUT', () => undefined, { body: 150 }],
  ])('%s: a transient ServiceError (status 0) whose cause is a NetworkError, sent', async (_n, code, then, t) => {
    const { c } = client(await cutting(then), { timeouts: t });
    const dl = await c.datasets.download('snap_x', { format: 'jsonl' });
    const { bytes, error } = await readAll(dl.body as AsyncIterable<Buffer>);
    expect(bytes).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 0, transient: true, sent: true });
    expect((error as ServiceError).cause).toBeInstanceOf(NetworkError);
    expect((error as ServiceError).cause).toMatchObject({ code, sent: true });
    expect((error as ServiceError).hint).toMatch(/connection to the service broke/);
    expect(isTransient(error)).toBe(true);
  });

  it('no answer before the headers timeout: retried, then a transient error that may have been sent', async () => {
    const s = await scripted(() => undefined);
    const { c, retries } = client(s.url, {
      timeouts: { headers: 100 },
      retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 },
    });
    const err = (await c.datasets.list().catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 0, transient: true, sent: true });
    expect(err.cause).toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(retries).toHaveLength(1);
    expect(s.hits).toHaveLength(2);
  });
});
