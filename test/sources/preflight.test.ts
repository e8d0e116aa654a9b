/**
 * The sources' service preflight against the real emulator: a zone typo, a zone of the wrong type, an unknown
 * dataset / snapshot / lookup request and a refused key each fail with the option and the fix, with free calls
 * only — no page requested, no paid counter moved. A dataset's existence comes from the dataset list: its metadata,
 * which the service (and the emulator, by default) publishes for a minority of datasets, is only a hint.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { SluiceError } from '../../src/core/errors.js';
import type { Source } from '../../src/core/types.js';
import { deepLookupSchema, deepLookupSource } from '../../src/sources/deep-lookup.js';
import { checkSearchZone } from '../../src/sources/preflight.js';
import { reviewsSchema, reviewsSource } from '../../src/sources/reviews.js';
import { serpSchema, serpSource } from '../../src/sources/serp.js';
import { snapshotSchema, snapshotSource } from '../../src/sources/snapshot.js';
import { COMPANY_PROFILES_ID, JOB_LISTINGS_ID } from '../../src/emulator/data/datasets-catalogue.js';
import { driveCrawl } from '../support/drive-crawl.js';
import { quietLogger, resetStats, sourceContext, startHarness, stats, type Harness } from './crawl-harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ seed: 3 });
});
afterAll(() => h?.close());
beforeEach(() => resetStats(h));

function serp(zone: string): Source {
  return serpSource.create(serpSchema.parse({ type: 'serp', zone, queries: ['ramen berlin'] }), h.deps);
}

async function failure(source: Source): Promise<SluiceError> {
  const err = await source.preflight!(sourceContext(h)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SluiceError);
  return err as SluiceError;
}

/** Nothing but free reads: no page requested, no paid job. */
async function expectNothingPaid(): Promise<void> {
  const s = (await stats(h)) as Awaited<ReturnType<typeof stats>> & { paid: Record<string, number> };
  expect(s.paid).toEqual({});
  expect(s.routes['POST /request']).toBeUndefined();
}

describe('crawl preflight: the zone', () => {
  it('passes for a search zone of the account', async () => {
    await expect(serp('serp_zone').preflight!(sourceContext(h))).resolves.toBeUndefined();
    await expectNothingPaid();
  });

  it('a zone typo names the zone, a guess and the account’s search zones', async () => {
    const err = await failure(serp('serp_zon'));
    expect(err.message).toBe('zone "serp_zon" does not exist in this account (did you mean "serp_zone"?)');
    expect(err.hint).toBe("set source.zone to one of the account's search zones: serp_zone");
    await expectNothingPaid();
  });

  it('a zone of another type cannot fetch search pages', async () => {
    const err = await failure(serp('static_zone'));
    expect(err.message).toBe('zone "static_zone" is of type static: it cannot fetch search or review pages');
    expect(err.hint).toContain('serp_zone');
  });

  it('reviews crawls are checked the same way', async () => {
    const cfg = reviewsSchema.parse({ type: 'reviews', zone: 'nope', fids: ['0x89c259a9b3117469:0xd134e199a405a163'] });
    const err = await failure(reviewsSource.create(cfg, h.deps));
    expect(err.message).toMatch(/^zone "nope" does not exist in this account/);
  });

  it('a refused key is said as such', async () => {
    const client = createClient({ baseUrl: h.emu.url, apiKey: 'wrong-key', retry: { retries: 0 } });
    try {
      const cfg = serpSchema.parse({ type: 'serp', zone: 'serp_zone', queries: ['q'] });
      const source = serpSource.create(cfg, { ...h.deps, client: async () => client });
      const err = await failure(source);
      expect(err.message).toBe('the service refused the API key (service.api_key): Invalid credentials');
      expect(err.hint).toBeTruthy();
    } finally {
      await client.close();
    }
  });

  it('a service that cannot list zones (404) skips the check with a warning', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = createClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
      retry: { retries: 0 },
    });
    const warnings: string[] = [];
    try {
      await expect(checkSearchZone(client, 'serp_zone', quietLogger(warnings))).resolves.toBeUndefined();
      expect(warnings.join('\n')).toMatch(/zone "serp_zone" is not checked/);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('crawl preflight when the zones cannot be listed', () => {
  it('the listing failing (500) leaves the check to the first page, which names the zone and the type it needs', async () => {
    const d = await startHarness({
      seed: 3,
      faults: { rules: [{ route: 'GET /zone/get_active_zones', rate: 1, faults: { '500': 1 } }] },
    });
    try {
      const warnings: string[] = [];
      const deps = { ...d.deps, log: quietLogger(warnings) };
      const cfg = serpSchema.parse({ type: 'serp', zone: 'static_zone', queries: ['ramen berlin', 'tea kyoto'] });
      const source = serpSource.create(cfg, deps);
      const ctx = sourceContext({ deps, baseDir: d.baseDir });
      await expect(source.preflight!(ctx)).resolves.toBeUndefined();
      expect(warnings.join('\n')).toMatch(/cannot list the account's zones .*500.*: zone "static_zone" is not checked/);
      const result = await driveCrawl(source, ctx, { concurrency: 1 });
      expect((result.error as Error).message).toMatch(
        /403: client_10090: zone "static_zone" cannot fetch pages through \/request: it must be a zone of type serp or unblocker/,
      );
      expect((result.error as SluiceError).hint).not.toMatch(/API key/);
      expect((await stats(d)).routes['POST /request']).toBe(1);
    } finally {
      await d.close();
    }
  });
});

describe('snapshot preflight', () => {
  const snapshot = (dataset_id: string, filter: Record<string, unknown>): Source =>
    snapshotSource.create(snapshotSchema.parse({ type: 'snapshot', dataset_id, filter, records_limit: 10 }), h.deps);

  it('an unknown dataset fails before the filter job, with a guess among the listed ids', async () => {
    const err = await failure(snapshot('gd_l1vikfnt1wgvvqz9Xw', { name: 'x', operator: '=', value: 1 }));
    expect(err.message).toBe(
      'dataset gd_l1vikfnt1wgvvqz9Xw does not exist: it is not among the 4 datasets the service lists (did you mean "gd_l1vikfnt1wgvvqz95w"?)',
    );
    expect(err.hint).toMatch(/source\.dataset_id.*sluice datasets list/);
    await expectNothingPaid();
  });

  it('a listed dataset without metadata (404, like most of the service’s) passes: existence comes from the list', async () => {
    const s = await stats(h);
    expect(s.routes['GET /datasets/:id/metadata'] ?? 0).toBe(0);
    const ctx = sourceContext(h);
    h.warnings.length = 0;
    await expect(
      snapshot(JOB_LISTINGS_ID, { name: 'country_code', operator: '=', value: 'DE' }).preflight!(ctx),
    ).resolves.toBeUndefined();
    // The metadata was asked for (a hint) and answered 404; nothing was said about it, nothing was paid.
    const after = await stats(h);
    expect(after.routes['GET /datasets/list']).toBe(1);
    expect(after.routes['GET /datasets/:id/metadata']).toBe(1);
    expect(h.warnings).toEqual([]);
    await expectNothingPaid();
  });

  it('when the metadata answers, a field it does not list is a warning with a guess, not a refusal', async () => {
    h.warnings.length = 0;
    const filter = {
      operator: 'and',
      filters: [
        { name: 'folowers', operator: '>', value: 10 },
        { name: 'country_code', operator: '=', value: 'DE' },
      ],
    };
    await expect(snapshot(COMPANY_PROFILES_ID, filter).preflight!(sourceContext(h))).resolves.toBeUndefined();
    expect(h.warnings).toEqual([
      'source.filter names field "folowers", which the dataset\'s metadata does not list (did you mean "followers"?): the service will refuse the job if the field does not exist',
    ]);
    await expectNothingPaid();
  });

  it('an unknown snapshot id names source.snapshot_id', async () => {
    const cfg = snapshotSchema.parse({ type: 'snapshot', snapshot_id: 'snap_nosuchsnapshot' });
    const err = await failure(snapshotSource.create(cfg, h.deps));
    expect(err.message).toMatch(/^snapshot snap_nosuchsnapshot does not exist/);
    expect(err.hint).toMatch(/^check source\.snapshot_id/);
  });
});

describe('deep lookup preflight', () => {
  it('an unknown request id names source.request_id', async () => {
    const cfg = deepLookupSchema.parse({ type: 'deep_lookup', request_id: 'ai_nosuchrequest' });
    const err = await failure(deepLookupSource.create(cfg, h.deps));
    expect(err.message).toMatch(/^deep lookup request ai_nosuchrequest does not exist/);
    expect(err.hint).toMatch(/^check source\.request_id/);
    await expectNothingPaid();
  });

  it('a query checks the key only, with a free read', async () => {
    const cfg = deepLookupSchema.parse({ type: 'deep_lookup', query: 'Find all coffee roasters in Portland' });
    await expect(deepLookupSource.create(cfg, h.deps).preflight!(sourceContext(h))).resolves.toBeUndefined();
    await expectNothingPaid();
  });
});
