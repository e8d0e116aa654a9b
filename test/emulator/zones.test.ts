import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const AUTH = { authorization: 'Bearer emulator-key', 'content-type': 'application/json' };
type Obj = Record<string, any>;

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await startEmulator({ seed: 5 });
});
afterAll(() => emu.close());

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${emu.url}${path}`, {
    method,
    headers: AUTH,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

async function json(method: string, path: string, body?: unknown): Promise<{ status: number; body: Obj }> {
  const res = await call(method, path, body);
  return { status: res.status, body: (await res.json()) as Obj };
}

const BUCKETS = ['back_m2', 'back_m1', 'back_m0', 'back_d2', 'back_d1', 'back_d0'];

describe('POST /zone and GET /zone/get_active_zones', () => {
  it('starts with a search zone and a static zone', async () => {
    const { status, body } = await json('GET', '/zone/get_active_zones');
    expect(status).toBe(200);
    expect(body).toEqual(
      expect.arrayContaining([
        { name: 'serp_zone', type: 'serp' },
        { name: 'static_zone', type: 'static' },
      ]),
    );
  });

  it('creates a zone (201), counts it as paid, and the new search zone serves /request', async () => {
    const before = emu.stats.paid.zone_create ?? 0;
    const res = await json('POST', '/zone', {
      zone: { name: 'my_serp', type: 'serp' },
      plan: { type: 'serp', ips: 0, ub_premium: false, solve_captcha_disable: true, custom_headers: false },
    });
    expect(res.status).toBe(201);
    expect(emu.stats.paid.zone_create).toBe(before + 1);
    expect((await json('GET', '/zone/get_active_zones')).body).toContainEqual({ name: 'my_serp', type: 'serp' });
    const page = await call('POST', '/request', {
      zone: 'my_serp',
      url: 'https://www.google.com/search?q=tea&brd_json=1',
      format: 'raw',
    });
    expect(page.status).toBe(200);
  });

  it('rejects a duplicate name with 409 and an invalid body with 400, without charging', async () => {
    const body = { zone: { name: 'dup_zone', type: 'serp' }, plan: { type: 'serp' } };
    expect((await json('POST', '/zone', body)).status).toBe(201);
    const paid = emu.stats.paid.zone_create;
    const dup = await json('POST', '/zone', body);
    expect(dup.status).toBe(409);
    expect(dup.body.error).toContain('dup_zone');
    const badType = await json('POST', '/zone', { zone: { name: 'x1', type: 'serp' }, plan: { ips: 'three' } });
    expect(badType.status).toBe(400);
    expect(badType.body.validation_errors.join(' ')).toContain('plan.ips');
    const noName = await json('POST', '/zone', { zone: { type: 'serp' }, plan: {} });
    expect(noName.status).toBe(400);
    expect(noName.body.validation_errors.join(' ')).toContain('zone.name');
    const boolAsString = await json('POST', '/zone', {
      zone: { name: 'x2', type: 'static' },
      plan: { ub_premium: 'false' },
    });
    expect(boolAsString.status).toBe(400);
    expect(emu.stats.paid.zone_create).toBe(paid);
  });
});

describe('GET /zone/cost', () => {
  it('returns six buckets with cost and range under the customer id; day buckets sit inside back_m0', async () => {
    const { status, body } = await json('GET', '/zone/cost?zone=serp_zone');
    expect(status).toBe(200);
    const [customer] = Object.keys(body);
    expect(customer).toBe('c_emulator');
    const b = body[customer!];
    expect(Object.keys(b).sort()).toEqual([...BUCKETS].sort());
    for (const k of BUCKETS) {
      expect(typeof b[k].cost).toBe('number');
      expect(typeof b[k].range.from).toBe('string');
    }
    expect(b.back_m0.range.from).toMatch(/^[A-Z][a-z]{2}-\d{4}$/);
    expect(b.back_d0.range.from).toMatch(/^\d{2}-[A-Z][a-z]{2}-\d{4}$/);
    expect(b.back_m0.cost).toBeGreaterThanOrEqual(b.back_d0.cost);
  });

  it('has bw only on buckets with traffic, and counts traffic served through the zone', async () => {
    await json('POST', '/zone', { zone: { name: 'fresh_serp', type: 'serp' }, plan: { type: 'serp' } });
    const before = (await json('GET', '/zone/cost?zone=fresh_serp')).body.c_emulator;
    for (const k of BUCKETS) {
      expect(before[k]).not.toHaveProperty('bw');
      expect(before[k].cost).toBe(0);
    }
    for (const q of ['a', 'b', 'c'])
      await call('POST', '/request', {
        zone: 'fresh_serp',
        url: `https://www.google.com/search?q=${q}&brd_json=1`,
        format: 'raw',
      });
    const after = (await json('GET', '/zone/cost?zone=fresh_serp')).body.c_emulator;
    expect(after.back_d0.bw).toBeGreaterThan(0);
    expect(after.back_d0.reqs_serp).toBe(3);
    expect(after.back_d0.cost).toBeGreaterThan(0);
    expect(after.back_d1).not.toHaveProperty('bw');
  });

  it('replaces the buckets with one custom bucket for from/to (to exclusive)', async () => {
    const { body } = await json('GET', '/zone/cost?zone=fresh_serp&from=2020-01-01&to=2020-02-01');
    expect(Object.keys(body.c_emulator)).toEqual(['custom']);
    expect(body.c_emulator.custom).toEqual({ cost: 0, range: { from: '2020-01-01', to: '2020-02-01' } });
    const today = new Date(emu.ctx.clock.now()).toISOString().slice(0, 10);
    const tomorrow = new Date(emu.ctx.clock.now() + 86_400_000).toISOString().slice(0, 10);
    const excl = (await json('GET', `/zone/cost?zone=fresh_serp&from=${today}&to=${today}`)).body.c_emulator.custom;
    expect(excl.cost).toBe(0);
    const incl = (await json('GET', `/zone/cost?zone=fresh_serp&from=${today}&to=${tomorrow}`)).body.c_emulator.custom;
    expect(incl.reqs_serp).toBe(3);
  });

  it('errors: missing zone 400, unknown zone 422, unparseable period 500', async () => {
    expect((await json('GET', '/zone/cost')).status).toBe(400);
    expect((await json('GET', '/zone/cost?zone=ghost')).status).toBe(422);
    const bad = await json('GET', '/zone/cost?zone=serp_zone&from=yesterday&to=2025-01-01');
    expect(bad.status).toBe(500);
    expect(bad.body.error).toBe('You must provide period with both to and from');
    expect((await json('GET', '/zone/cost?zone=serp_zone&from=2025-02-30&to=2025-03-01')).status).toBe(500);
  });
});

describe('POST /zone/ips/refresh', () => {
  it('refreshes all or some IPs of a static zone', async () => {
    const paid = emu.stats.paid.ip_refresh ?? 0;
    const all = await json('POST', '/zone/ips/refresh', { zone: 'static_zone' });
    expect(all.status).toBe(200);
    expect(all.body.ips).toHaveLength(3);
    expect(all.body.new_ips).toEqual(all.body.ips);
    const one = await json('POST', '/zone/ips/refresh', { zone: 'static_zone', ips: [all.body.ips[1]] });
    expect(one.body.new_ips).toHaveLength(1);
    expect(one.body.ips[0]).toBe(all.body.ips[0]);
    expect(one.body.ips[1]).toBe(one.body.new_ips[0]);
    expect(one.body.ips[1]).not.toBe(all.body.ips[1]);
    expect(emu.stats.paid.ip_refresh).toBe(paid + 2);
  });

  it('answers a dedicated residential zone with vips', async () => {
    await json('POST', '/zone', {
      zone: { name: 'res_zone', type: 'resident' },
      plan: { type: 'resident', vips_type: 'domain', vips: '2', vip_country: 'tr' },
    });
    const res = await json('POST', '/zone/ips/refresh', { zone: 'res_zone' });
    expect(res.status).toBe(200);
    expect(res.body.vips).toHaveLength(2);
    for (const v of res.body.vips) expect(v).toEqual({ vip: expect.any(String), country: 'tr' });
  });

  it('rejects unknown zones, zones without IPs, foreign IPs and uppercase countries without charging', async () => {
    const paid = emu.stats.paid.ip_refresh ?? 0;
    expect((await json('POST', '/zone/ips/refresh', { zone: 'ghost' })).status).toBe(422);
    expect((await json('POST', '/zone/ips/refresh', { zone: 'serp_zone' })).status).toBe(400);
    expect((await json('POST', '/zone/ips/refresh', { zone: 'static_zone', ips: ['1.2.3.4'] })).status).toBe(400);
    expect((await json('POST', '/zone/ips/refresh', { zone: 'static_zone', country: 'US' })).status).toBe(400);
    expect((await json('POST', '/zone/ips/refresh', {})).status).toBe(400);
    expect(emu.stats.paid.ip_refresh ?? 0).toBe(paid);
  });
});

describe('DELETE /zone/domain_perm', () => {
  it('removes space-separated domains and returns the resulting list', async () => {
    const res = await json('DELETE', '/zone/domain_perm', {
      zone: 'static_zone',
      type: 'whitelist',
      domain: 'example.com api.example.net',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ whitelist: 'shop.example.org' });
    const black = await json('DELETE', '/zone/domain_perm', {
      zone: 'static_zone',
      type: 'blacklist',
      domain: 'ads.example.com',
    });
    expect(black.body).toEqual({ blacklist: '' });
    expect(emu.stats.paid.domain_perm).toBe(2);
  });

  it('validates the body', async () => {
    expect(
      (await json('DELETE', '/zone/domain_perm', { zone: 'static_zone', type: 'greylist', domain: 'a.com' })).status,
    ).toBe(400);
    expect(
      (await json('DELETE', '/zone/domain_perm', { zone: 'ghost', type: 'whitelist', domain: 'a.com' })).status,
    ).toBe(422);
    expect(emu.stats.paid.domain_perm).toBe(2);
  });
});

describe('GET /countrieslist', () => {
  it('lists country codes for the six zone types', async () => {
    const { status, body } = await json('GET', '/countrieslist');
    expect(status).toBe(200);
    expect(Object.keys(body.zone_types).sort()).toEqual(
      [
        'DC_dedicated_host',
        'DC_dedicated_ip',
        'DC_shared',
        'ISP_dedicated_host',
        'ISP_dedicated_ip',
        'ISP_shared',
      ].sort(),
    );
    for (const v of Object.values(body.zone_types) as Obj[]) {
      expect(v.country_codes.length).toBeGreaterThan(0);
      for (const c of v.country_codes) expect(c).toMatch(/^[a-z]{2}$/);
    }
  });
});
