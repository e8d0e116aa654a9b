/**
 * `zone_cost`: its period is checked when the pipeline loads (the service answers an impossible day with a 500), and
 * its rows keep every field the service sends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Row } from '../../src/core/types.js';
import { costRows, zoneCostSchema, zoneCostSource } from '../../src/sources/zone-cost.js';
import { sourceContext, startHarness, type Harness } from './crawl-harness.js';

const parse = (from: string, to: string) => zoneCostSchema.safeParse({ type: 'zone_cost', zones: ['z'], from, to });

describe('zone_cost period', () => {
  it('takes real days, from before to', () => {
    expect(parse('2026-02-01', '2026-03-01').success).toBe(true);
  });

  it.each([
    ['2026-02-30', '2026-03-01', 'from', /from "2026-02-30" is not a calendar day/],
    ['2026-02-01', '2026-02-29', 'to', /to "2026-02-29" is not a calendar day/],
    ['2026-03-02', '2026-03-01', 'from', /after to/],
  ])('refuses %s → %s, at the field', (from, to, field, message) => {
    const r = parse(from, to);
    expect(r.success).toBe(false);
    const issue = r.error!.issues[0]!;
    expect(issue.path).toEqual([field]);
    expect(issue.message).toMatch(message);
  });
});

describe('zone_cost rows in the live shape (docs/service.md §7.2)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ seed: 4 });
  });
  afterAll(() => h.close());

  async function rows(zones: string[]): Promise<Row[]> {
    const source = zoneCostSource.create(zoneCostSchema.parse({ type: 'zone_cost', zones }), h.deps);
    const out: Row[] = [];
    for (const unit of await source.plan(sourceContext(h)))
      for await (const batch of source.read(unit, sourceContext(h))) out.push(...batch);
    return out;
  }

  it('keeps reqs_serp and reqs_unblocker, null on the buckets without them', async () => {
    await h.client.zones.create({ zone: { name: 'unlocker', type: 'unblocker' }, plan: { type: 'unblocker' } });
    for (const zone of ['serp_zone', 'unlocker'])
      await h.client.request.page({ zone, url: 'https://www.google.com/search?q=tea&brd_json=1' });
    const got = await rows(['serp_zone', 'unlocker']);
    const today = (zone: string): Row => got.find((r) => r.zone === zone && r.bucket === 'back_d0')!;
    // Each zone's requests under the name the service gives them, the other name null: every row has both columns.
    expect(today('serp_zone')).toMatchObject({ reqs_serp: expect.any(Number), reqs_unblocker: null });
    expect(today('unlocker')).toMatchObject({ reqs_serp: null, reqs_unblocker: 1, bw: expect.any(Number) });
    // A bucket without traffic (the zone did not exist two months ago): no bw, no request counts, only cost.
    expect(got.find((r) => r.zone === 'unlocker' && r.bucket === 'back_m2')).toMatchObject({
      cost: 0,
      bw: null,
      reqs_serp: null,
      reqs_unblocker: null,
    });
    for (const r of got)
      expect(Object.keys(r)).toEqual(expect.arrayContaining(['cost', 'bw', 'reqs_serp', 'reqs_unblocker']));
  });

  it('keeps a field the service sends beyond the documented ones, under its own name', () => {
    const answer = { c_1: { back_d0: { cost: 1.5, bw: 10, reqs_browser_api: 3, range: { from: 'a', to: 'b' } } } };
    expect(costRows('z', answer)).toEqual([
      {
        zone: 'z',
        account: 'c_1',
        bucket: 'back_d0',
        period: 'day',
        cost: 1.5,
        bw: 10,
        reqs_serp: null,
        reqs_unblocker: null,
        range_from: 'a',
        range_to: 'b',
        reqs_browser_api: 3,
      },
    ]);
  });
});
