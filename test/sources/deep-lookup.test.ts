import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Row, Source } from '../../src/core/types.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { deepLookupSchema, deepLookupSource } from '../../src/sources/deep-lookup.js';
import { sourceContext, startHarness, type Harness } from './crawl-harness.js';

/** Seed 1: 42 entities satisfy it, so a result_limit of 10 matches 10. */
const QUERY = 'Find all AI startups founded after 2020 with more than 50 employees';
const TRIGGER = 'POST /datasets/deep_lookup/v1/trigger';
const ENRICH = 'POST /datasets/deep_lookup/v1/request/:id/enrich';
const PREVIEW = 'POST /datasets/deep_lookup/v1/preview';

const open: Harness[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

/** Emulated time runs 20,000× faster (unless told): the whole lifecycle takes milliseconds. */
async function harness(timeScale = 20_000): Promise<Harness> {
  const h = await startHarness({ seed: 1, timeScale });
  open.push(h);
  return h;
}

function source(h: Harness, cfg: Record<string, unknown>): Source {
  const parsed = deepLookupSchema.parse({
    type: 'deep_lookup',
    poll: { interval_ms: 10, timeout_s: 30, enrich_settle_s: 1 },
    ...cfg,
  });
  return deepLookupSource.create(parsed, h.deps);
}

async function readAll(src: Source, h: Harness, state: MemoryStateStore): Promise<{ rows: Row[]; units: string[] }> {
  const ctx = sourceContext(h, state);
  const units = await src.plan(ctx);
  const rows: Row[] = [];
  for (const u of units) for await (const batch of src.read(u, ctx)) rows.push(...batch);
  return { rows, units: units.map((u) => u.id) };
}

describe('deep lookup source against the emulator', () => {
  it('preview → trigger → wait → enrich → download: rows carry the enriched column (json)', async () => {
    const h = await harness();
    const state = new MemoryStateStore();
    const src = source(h, {
      query: QUERY,
      result_limit: 10,
      enrich: [{ column_name: 'cto_name', query: 'CTO or head of engineering' }],
      max_cost: '$20.00',
    });
    const { rows, units } = await readAll(src, h, state);
    expect(units).toEqual([expect.stringMatching(/^deep_lookup:ai_[a-z0-9]+:json:\+cto_name$/)]);
    expect(rows).toHaveLength(10);
    for (const r of rows) {
      expect(Object.keys(r)).toEqual([
        'company_name',
        'website',
        'founding_date',
        'employee_count',
        'headquarters',
        'industry',
        'cto_name',
      ]);
      expect(r.employee_count).toBeGreaterThan(50);
    }
    // Enrichment finished before the download: (nearly) every row has a value.
    expect(rows.filter((r) => typeof r.cto_name === 'string').length).toBeGreaterThanOrEqual(8);
    expect(h.emu.stats.paid).toEqual({ trigger: 1, enrich: 1 });
  });

  it('csv download gives the same rows', async () => {
    const h = await harness();
    const json = await readAll(source(h, { query: QUERY, result_limit: 10 }), h, new MemoryStateStore());
    const csv = await readAll(
      source(h, { query: QUERY, result_limit: 10, download: { format: 'csv' } }),
      h,
      new MemoryStateStore(),
    );
    expect(csv.rows.map((r) => r.company_name)).toEqual(json.rows.map((r) => r.company_name));
    expect(csv.rows.map((r) => String(r.employee_count))).toEqual(json.rows.map((r) => String(r.employee_count)));
  });

  it('max_cost below the trigger bound refuses before any paid call (nothing triggered, nothing saved)', async () => {
    const h = await harness();
    const state = new MemoryStateStore();
    const src = source(h, { query: QUERY, result_limit: 10, max_cost: '$9.99' });
    const err = await src.plan(sourceContext(h, state)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/refusing to trigger.*\$10\.00.*\$9\.99/);
    expect((err as SluiceError).hint).toBeTruthy();
    expect(h.emu.stats.paid).toEqual({});
    expect(h.emu.stats.routes[TRIGGER]).toBeUndefined();
    expect(h.emu.stats.routes[PREVIEW]).toBeUndefined();
    expect(state.data.size).toBe(0);
  });

  it('max_cost that covers the trigger but not the enrichment refuses before any paid call', async () => {
    const h = await harness();
    const src = source(h, {
      query: QUERY,
      result_limit: 10,
      enrich: [{ column_name: 'cto_name', query: 'CTO' }],
      // $10.00 for the records + 10 × $0.05 for the column = $10.50.
      max_cost: '$10.20',
    });
    await expect(src.plan(sourceContext(h, new MemoryStateStore()))).rejects.toThrow(
      /refusing to trigger the request and enrich it: worst-case cost \$10\.50 exceeds max_cost \$10\.20/,
    );
    expect(h.emu.stats.paid).toEqual({});
  });

  it('an existing request whose enrichment would exceed max_cost: enrich refused, nothing paid', async () => {
    const h = await harness();
    const triggered = await source(h, { query: QUERY, result_limit: 10 }).plan(
      sourceContext(h, new MemoryStateStore()),
    );
    const requestId = triggered[0]!.params.request_id as string;
    const src = source(h, {
      request_id: requestId,
      enrich: [{ column_name: 'cto_name', query: 'CTO' }],
      max_cost: '$0.10',
    });
    await expect(src.plan(sourceContext(h, new MemoryStateStore()))).rejects.toThrow(
      /refusing to enrich column cto_name: worst-case cost .* exceeds max_cost \$0\.10/,
    );
    expect(h.emu.stats.paid).toEqual({ trigger: 1 });
  });

  it('a second plan with the same state reuses the request id: no second trigger, no second enrich', async () => {
    const h = await harness();
    const state = new MemoryStateStore();
    const cfg = { query: QUERY, result_limit: 10, enrich: [{ column_name: 'ceo_name', query: 'CEO' }] };
    const first = await source(h, cfg).plan(sourceContext(h, state));
    const second = await source(h, cfg).plan(sourceContext(h, state));
    expect(second.map((u) => u.id)).toEqual(first.map((u) => u.id));
    expect(second[0]!.params).toEqual(first[0]!.params);
    expect(h.emu.stats.routes[TRIGGER]).toBe(1);
    expect(h.emu.stats.routes[ENRICH]).toBe(1);
    expect(h.emu.stats.paid).toEqual({ trigger: 1, enrich: 1 });
  });

  it('a dry run makes no paid call and says what a run would pay for', async () => {
    const h = await harness();
    const reports: string[] = [];
    const units = await source(h, { query: QUERY, result_limit: 10 }).plan(
      sourceContext(h, new MemoryStateStore(), { dryRun: true, report: (_k, t) => reports.push(t) }),
    );
    expect(units).toEqual([]);
    expect(reports.join('\n')).toMatch(/trigger \(paid, up to \$10\.00: not made by plan\)/);
    expect(h.emu.stats.paid).toEqual({});
  });

  it('a request that fails in the service fails the plan with the request id', async () => {
    const h = await harness();
    const src = source(h, { query: 'Find all SaaS companies #fail', result_limit: 10 });
    await expect(src.plan(sourceContext(h, new MemoryStateStore()))).rejects.toThrow(/request ai_\w+ ended failed/);
  });

  describe('an enrichment shows no status (docs/service.md §4.2): only its values, filling in', () => {
    /**
     * A completed lookup request of 20 records on an emulator running 20× faster, where an enrichment of those 20
     * rows fills in over about a fifth of a second: triggered, then the emulated clock moved past the request's end.
     */
    async function completedRequest(): Promise<{ h: Harness; requestId: string }> {
      const h = await harness(20);
      const { request_id: requestId } = await h.client.deepLookup.trigger({ query: QUERY, result_limit: 20 });
      await fetch(`${h.emu.url}/_emulator/clock`, { method: 'POST', body: JSON.stringify({ advance: '1h' }) });
      return { h, requestId };
    }
    const enrich = (h: Harness, requestId: string, poll: Record<string, number> = {}): Source =>
      source(h, {
        request_id: requestId,
        enrich: [{ column_name: 'cto_name', query: 'CTO' }],
        poll: { interval_ms: 10, timeout_s: 30, enrich_settle_s: 1, ...poll },
      });

    it('the column is downloaded once its values are in: every value the service ends with, none missing', async () => {
      const { h, requestId } = await completedRequest();
      const { rows } = await readAll(enrich(h, requestId), h, new MemoryStateStore());
      const final = await h.client.deepLookup.get(requestId);
      expect(final).not.toHaveProperty('enrichments');
      expect(rows.map((r) => r.cto_name)).toEqual(final.data!.map((r) => r.cto_name));
      expect(rows.filter((r) => typeof r.cto_name === 'string').length).toBeGreaterThan(15);
    });

    it('not done within the wait: the run fails naming the column and how far it got (nothing paid twice)', async () => {
      const { h, requestId } = await completedRequest();
      const state = new MemoryStateStore();
      const err = (await enrich(h, requestId, { timeout_s: 0.05 })
        .plan(sourceContext(h, state))
        .catch((e: unknown) => e)) as SluiceError;
      expect(err).toBeInstanceOf(SluiceError);
      expect(err.message).toMatch(
        /^the enrichment of column cto_name of deep lookup request ai_\w+ is not done after 0\.05 s: .*no enrichment status/,
      );
      expect(err.hint).toMatch(/not paid again/);
      // The next run waits for the same enrichment: no second enrich call.
      await enrich(h, requestId).plan(sourceContext(h, state));
      expect(h.emu.stats.paid).toEqual({ trigger: 1, enrich: 1 });
    });
  });
});
