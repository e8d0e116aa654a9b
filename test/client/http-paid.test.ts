/**
 * Paid and account-changing calls are never started twice: after a failure that may have reached the handler, one
 * request and an AmbiguousPaidCallError.
 */
import { type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { AmbiguousPaidCallError, type ServiceClient } from '../../src/client/index.js';
import { isTransient } from '../../src/core/retry.js';

import { client, closeAfterEach, emulator, reset, scripted, send } from './http-helpers.js';

closeAfterEach();

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
