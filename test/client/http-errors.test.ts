/**
 * How the client reads errors: every error shape surfaces the service message and code, and the API key never
 * appears in any of them.
 */
import { describe, expect, it } from 'vitest';
import { NotReadyError, ServiceError } from '../../src/client/index.js';
import { NetworkError } from '../../src/core/errors.js';

import { client, closeAfterEach, reset, scripted, send } from './http-helpers.js';

closeAfterEach();

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
