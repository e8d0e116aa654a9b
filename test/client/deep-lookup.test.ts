/** Deep lookup through `createClient` against the emulator: the whole flow, its errors, and the paid calls' policy. */
import { parse as parseCsv } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { AmbiguousPaidCallError, ServiceError, createClient, type ServiceClient } from '../../src/client/index.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const QUERY = 'Find all fintech companies founded before 2010';
const TRIGGER = 'POST /datasets/deep_lookup/v1/trigger';
const ENRICH = 'POST /datasets/deep_lookup/v1/request/:id/enrich';
const STATUS = 'GET /datasets/deep_lookup/v1/request/:id/status';
const CANCEL = 'POST /datasets/deep_lookup/v1/request/:id/cancel';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * By default emulated time runs 20,000× faster than real time: a lifecycle of minutes passes in milliseconds.
 * Tests that must catch a request still running use real time (a request runs for over a minute).
 */
async function setup(
  faults?: unknown,
  timeScale = 20_000,
): Promise<{ e: EmulatorHandle; c: ServiceClient; retries: string[] }> {
  const e = await startEmulator({ seed: 1, timeScale, faults });
  const retries: string[] = [];
  const c = createClient({
    baseUrl: e.url,
    apiKey: 'emulator-key',
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 50 },
    onRetry: (i) => retries.push(i.reason),
  });
  cleanups.push(
    () => e.close(),
    () => c.close(),
  );
  return { e, c, retries };
}

async function until(check: () => Promise<boolean>): Promise<void> {
  // A deadline, not a count of polls: on a loaded machine each poll takes longer, and the job is as right.
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('the emulated job never reached the state waited for');
}

async function text(body: NodeJS.ReadableStream): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of body as AsyncIterable<Buffer>) parts.push(c);
  return Buffer.concat(parts).toString('utf8');
}

describe('the whole flow', () => {
  it('preview → trigger → status → get → enrich → download json and csv', async () => {
    const { e, c } = await setup();
    const preview = await c.deepLookup.createPreview(QUERY);
    expect(preview.preview_id).toMatch(/^dld_/);
    await until(async () => (await c.deepLookup.getPreview(preview.preview_id)).status === 'completed');
    const p = await c.deepLookup.getPreview(preview.preview_id);
    expect(p.sample_data).toHaveLength(10);

    const t = await c.deepLookup.trigger({ preview_id: preview.preview_id, result_limit: 12 });
    expect(t).toEqual({ request_id: expect.stringMatching(/^ai_/), status: 'queued', max_cost: '$12.00' });
    await until(async () => (await c.deepLookup.status(t.request_id)).status === 'completed');
    const s = await c.deepLookup.status(t.request_id);
    expect(s).toMatchObject({ progress: 100, matched_records: 12, result_limit: 12, is_trial: false });

    const got = await c.deepLookup.get(t.request_id);
    expect(got.data).toHaveLength(12);
    expect(got.total_cost).toBe('$12.00');
    for (const row of got.data!) expect(Number(String(row.founding_date).slice(0, 4))).toBeLessThan(2010);

    const en = await c.deepLookup.enrich(t.request_id, [{ column_name: 'ceo_name', query: 'Name of the CEO' }]);
    expect(en).toEqual({ column_name: 'ceo_name', status: 'processing', max_additional_cost: '$0.60' });
    // No status: the enrichment is complete once its cost is counted (12 records × $0.05 on top of $12.00).
    await until(async () => (await c.deepLookup.get(t.request_id)).total_cost === '$12.60');

    const json = JSON.parse(await text((await c.deepLookup.download(t.request_id, 'json')).body)) as Record<
      string,
      unknown
    >[];
    expect(json).toHaveLength(12);
    expect(json.filter((r) => typeof r.ceo_name === 'string').length).toBeGreaterThan(8);
    const dl = await c.deepLookup.download(t.request_id, 'csv');
    expect(dl.headers['content-type']).toMatch(/^text\/csv/);
    const csv = parseCsv(await text(dl.body), { columns: true }) as Record<string, string>[];
    expect(csv.map((r) => r.company_name)).toEqual(json.map((r) => r.company_name));
    expect(csv.map((r) => r.ceo_name)).toEqual(json.map((r) => (r.ceo_name === null ? '' : r.ceo_name)));
    expect(e.stats.paid).toEqual({ trigger: 1, enrich: 1 });
  });

  it('trigger with a query and spec, then cancel while it runs', async () => {
    const { c } = await setup(undefined, 1);
    const t = await c.deepLookup.trigger({
      query: QUERY,
      spec: { columns: [{ name: 'company_name', description: 'Name', type: 'enrichment' }] },
      result_limit: 100,
    });
    const cancelled = await c.deepLookup.cancel(t.request_id);
    expect(cancelled).toMatchObject({ request_id: t.request_id, status: 'cancelled' });
    expect((await c.deepLookup.status(t.request_id)).status).toBe('cancelled');
  });
});

describe('errors in the deep-lookup envelope', () => {
  it('INVALID_QUERY, REQUEST_NOT_FOUND and PROCESSING_ERROR come through with code, message and details', async () => {
    const { c, retries } = await setup();
    const bad = (await c.deepLookup.createPreview('AI startups').catch((x: unknown) => x)) as ServiceError;
    expect(bad).toBeInstanceOf(ServiceError);
    expect(bad).toMatchObject({
      status: 400,
      code: 'INVALID_QUERY',
      serviceMessage: expect.stringContaining('Find all'),
    });
    expect(bad.details).toHaveLength(1);

    await expect(c.deepLookup.status('ai_missing')).rejects.toMatchObject({
      status: 404,
      code: 'REQUEST_NOT_FOUND',
      serviceMessage: 'request ai_missing not found',
    });
    await expect(c.deepLookup.trigger({ query: QUERY, result_limit: 50_000 })).rejects.toMatchObject({
      status: 402,
      code: 'INSUFFICIENT_CREDITS',
    });

    const slow = await setup(undefined, 1);
    const t = await slow.c.deepLookup.trigger({ query: QUERY, result_limit: 5 });
    await expect(slow.c.deepLookup.download(t.request_id, 'json')).rejects.toMatchObject({
      status: 409,
      code: 'PROCESSING_ERROR',
      serviceMessage: expect.stringContaining('once'),
    });
    expect(slow.e.stats.routes['GET /datasets/deep_lookup/v1/request/:id/download']).toBe(1);
    expect([...retries, ...slow.retries]).toEqual([]);
  });
});

describe('paid calls under faults', () => {
  it.each(['500', '502', 'reset_before', 'reset_after'])(
    'trigger is not repeated after %s (AmbiguousPaidCallError)',
    async (kind) => {
      const { e, c } = await setup({ rules: [{ route: TRIGGER, rate: 1, faults: { [kind]: 1 }, max_per_route: 1 }] });
      await expect(c.deepLookup.trigger({ query: QUERY, result_limit: 5 })).rejects.toBeInstanceOf(
        AmbiguousPaidCallError,
      );
      expect(e.stats.routes[TRIGGER]).toBe(1);
      expect(e.stats.paid.trigger ?? 0).toBe(kind === 'reset_after' ? 1 : 0);
    },
  );

  it('trigger is retried after a 429 and starts exactly one request', async () => {
    const { e, c, retries } = await setup({
      rules: [{ route: TRIGGER, rate: 1, faults: { '429': 1 }, max_per_route: 2 }],
    });
    const t = await c.deepLookup.trigger({ query: QUERY, result_limit: 5 });
    expect(t.request_id).toMatch(/^ai_/);
    expect(retries).toHaveLength(2);
    expect(e.stats.routes[TRIGGER]).toBe(3);
    expect(e.stats.paid).toEqual({ trigger: 1 });
  });

  it('enrich: not repeated after a 502, retried after a 429', async () => {
    const { e, c } = await setup({
      rules: [{ route: ENRICH, rate: 1, faults: { '502': 1 }, max_per_route: 1 }],
    });
    const t = await c.deepLookup.trigger({ query: QUERY, result_limit: 5 });
    await until(async () => (await c.deepLookup.status(t.request_id)).status === 'completed');
    await expect(c.deepLookup.enrich(t.request_id, [{ column_name: 'ceo', query: 'CEO' }])).rejects.toBeInstanceOf(
      AmbiguousPaidCallError,
    );
    expect(e.stats.routes[ENRICH]).toBe(1);

    const other = await setup({ rules: [{ route: ENRICH, rate: 1, faults: { '429': 1 }, max_per_route: 1 }] });
    const t2 = await other.c.deepLookup.trigger({ query: QUERY, result_limit: 5 });
    await until(async () => (await other.c.deepLookup.status(t2.request_id)).status === 'completed');
    await other.c.deepLookup.enrich(t2.request_id, [{ column_name: 'ceo', query: 'CEO' }]);
    expect(other.e.stats.routes[ENRICH]).toBe(2);
    expect(other.e.stats.paid).toEqual({ trigger: 1, enrich: 1 });
  });

  it('status polls and cancel (free, idempotent) are retried on 5xx', async () => {
    const { e, c, retries } = await setup(
      {
        rules: [
          { route: STATUS, rate: 1, faults: { '503': 1 }, max_per_route: 1 },
          { route: CANCEL, rate: 1, faults: { '500': 1 }, max_per_route: 1 },
        ],
      },
      1,
    );
    const t = await c.deepLookup.trigger({ query: QUERY, result_limit: 500 });
    await c.deepLookup.status(t.request_id);
    expect((await c.deepLookup.cancel(t.request_id)).status).toBe('cancelled');
    expect(retries.map((r) => r.slice(0, 3))).toEqual(['503', '500']);
    expect(e.stats.routes[CANCEL]).toBe(2);
  });
});
