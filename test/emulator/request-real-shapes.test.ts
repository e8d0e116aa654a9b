/**
 * The emulator's `POST /request` in the real shapes sluice must handle: map search pages whose results carry each
 * place's `fid` (`{engine}/maps/search/<query>/`), the `page_repeat` fault (page 1 again for `start` > 0), and the
 * `sr_rate_limit` fault (a zone the service throttles: HTTP 200, the real status 429 and the code in headers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapsPage, mapsPlaceFids, serpQueryPlan } from '../../src/emulator/data/serp.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const SEED = 23;
const ENGINE = 'www.google.com';
const AUTH = { authorization: 'Bearer emulator-key', 'content-type': 'application/json' };
type Obj = Record<string, any>;

let plain: EmulatorHandle;
let repeating: EmulatorHandle;
beforeAll(async () => {
  plain = await startEmulator({ seed: SEED });
  repeating = await startEmulator({
    seed: SEED,
    faults: { rules: [{ route: 'POST /request', rate: 1, faults: { page_repeat: 1 } }] },
  });
});
afterAll(async () => {
  await plain.close();
  await repeating.close();
});

async function page(emu: EmulatorHandle, url: string): Promise<Obj> {
  const res = await fetch(`${emu.url}/request`, {
    method: 'POST',
    headers: AUTH,
    body: JSON.stringify({ zone: 'serp_zone', url, format: 'raw' }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Obj;
}

describe('map search pages', () => {
  const queries = Array.from({ length: 60 }, (_, i) => `hotel near station ${i}`);

  it('list places, each with its fid (also as map_id), rank and the fields of the real shape; no pagination', async () => {
    const q = queries.find((x) => mapsPlaceFids(SEED, ENGINE, x).length >= 3)!;
    const got = await page(plain, `https://${ENGINE}/maps/search/${encodeURIComponent(q)}/?brd_json=1`);
    expect(Object.keys(got).sort()).toEqual(['general', 'organic']);
    expect(got.general).toMatchObject({ query: q, country_code: 'US', gl: 'US' });
    expect(got.organic.map((p: Obj) => p.fid)).toEqual(mapsPlaceFids(SEED, ENGINE, q));
    got.organic.forEach((p: Obj, i: number) => {
      expect(p.fid).toMatch(/^0x[0-9a-f]+:0x[0-9a-f]+$/);
      expect(p.map_id).toBe(p.fid);
      expect(p.rank).toBe(i + 1);
      for (const k of ['title', 'address', 'phone', 'category', 'rating', 'reviews_cnt', 'latitude', 'longitude'])
        expect(p).toHaveProperty(k);
    });
    expect(got).toEqual(mapsPage(SEED, ENGINE, q));
  });

  it('some queries find no place; a + in the path is a space', async () => {
    const none = queries.find((x) => mapsPlaceFids(SEED, ENGINE, x).length === 0)!;
    const got = await page(plain, `https://${ENGINE}/maps/search/${none.replace(/ /g, '+')}/?brd_json=1`);
    expect(got.general.query).toBe(none);
    expect(got.organic).toEqual([]);
  });

  it('the places have review pages', async () => {
    const q = queries.find((x) => mapsPlaceFids(SEED, ENGINE, x).length > 0)!;
    const fid = mapsPlaceFids(SEED, ENGINE, q)[0]!;
    const got = await page(plain, `https://${ENGINE}/reviews?fid=${fid}&brd_json=1`);
    expect(Array.isArray(got.reviews)).toBe(true);
  });
});

describe('the page_repeat fault', () => {
  const q = Array.from({ length: 60 }, (_, i) => `bakery ${i}`).find((x) => serpQueryPlan(SEED, ENGINE, x).total > 25)!;
  const url = (start: number): string =>
    `https://${ENGINE}/search?q=${encodeURIComponent(q)}&start=${start}&brd_json=1`;

  it('answers the first page for a later start, and counts the fault only then', async () => {
    const first = await page(repeating, url(0));
    expect(repeating.stats.faults.page_repeat ?? 0).toBe(0);
    const second = await page(repeating, url(first.pagination.next_page_start ?? 10));
    expect(second.pagination.current_page).toBe(1);
    expect(second.organic).toEqual(first.organic);
    expect(repeating.stats.faults.page_repeat).toBe(1);
    // Without the fault the same request is page 2.
    expect((await page(plain, url(first.pagination.next_page_start ?? 10))).pagination.current_page).toBe(2);
  });
});

describe('the sr_rate_limit fault: a throttled zone', () => {
  it('answers every request through the zone with 200, x-brd-status-code 429 and the code, for throttle_s', async () => {
    const throttled = await startEmulator({
      seed: SEED,
      now: Date.parse('2025-06-01T10:00:00Z'),
      faults: {
        rules: [{ route: 'POST /request', rate: 1, max_per_route: 1, faults: { sr_rate_limit: 1 }, throttle_s: 10 }],
      },
    });
    try {
      const ask = (): Promise<Response> =>
        fetch(`${throttled.url}/request`, {
          method: 'POST',
          headers: AUTH,
          body: JSON.stringify({ zone: 'serp_zone', url: `https://${ENGINE}/search?q=tea&brd_json=1`, format: 'raw' }),
        });
      for (let i = 0; i < 2; i++) {
        const res = await ask();
        expect(res.status).toBe(200);
        expect(res.headers.get('x-brd-status-code')).toBe('429');
        expect(res.headers.get('x-brd-error-code')).toBe('sr_rate_limit');
        expect(res.headers.get('x-brd-error')).toMatch(/serp_zone.*auto-throttled due to low success rate/);
        expect(await res.text()).toBe('');
      }
      expect(throttled.stats.faults.sr_rate_limit).toBe(2);
      // Counted toward the client IP's block like 429s given outright.
      const ips = throttled.ipBlock.view(throttled.ctx.clock.now()).ips;
      expect(Object.values(ips).map((v) => v.total_429)).toEqual([2]);

      // Ten emulated seconds later the zone serves pages again.
      await fetch(`${throttled.url}/_emulator/clock`, { method: 'POST', body: JSON.stringify({ advance: '11s' }) });
      const res = await ask();
      expect(res.headers.get('x-brd-status-code')).toBeNull();
      expect(((await res.json()) as Obj).general.query).toBe('tea');
      expect(throttled.stats.faults.sr_rate_limit).toBe(2);
    } finally {
      await throttled.close();
    }
  });
});
