/**
 * Zone endpoints (account management): create, cost, IP refresh, domain permission removal, countries, active
 * zones, and the account's `GET /status`. Error bodies are `{error}` JSON; statuses follow docs/service.md §7 (cost: missing zone 400, unknown zone 422,
 * unparseable period 500 with the service's own misleading message).
 */
import { z } from 'zod';
import type { EmulatorContext } from '../context.js';
import { HttpError, type Router } from '../router.js';
import { serpRng } from '../data/serp-rng.js';
import { DAY_MS, isResidential, isSearch, zoneStateFor, type ZoneRecord, type ZoneState } from '../zones-state.js';

/** Plan fields with the types the spec shows; other keys pass (the real plan has more). */
const planSchema = z.looseObject({
  type: z.string().optional(),
  domain_whitelist: z.string().optional(),
  ips_type: z.string().optional(),
  bandwidth: z.string().optional(),
  ip_alloc_preset: z.string().optional(),
  ips: z.number().int().nonnegative().optional(),
  country: z.string().optional(),
  country_city: z.string().optional(),
  mobile: z.string().optional(),
  serp: z.string().optional(),
  city: z.string().optional(),
  asn: z.string().optional(),
  vip: z.string().optional(),
  vips_type: z.string().optional(),
  vips: z.string().regex(/^\d+$/, 'must be numeric text').optional(),
  vip_country: z.string().optional(),
  vip_country_city: z.string().optional(),
  pool_ip_type: z.string().optional(),
  ub_premium: z.boolean().optional(),
  solve_captcha_disable: z.boolean().optional(),
  custom_headers: z.boolean().optional(),
});

const createSchema = z.object({
  zone: z.object({
    name: z.string().regex(/^[a-z0-9_]+$/i, 'must be letters, digits and underscores'),
    type: z.string().min(1),
  }),
  plan: planSchema,
});

const refreshSchema = z.object({
  zone: z.string().min(1),
  ips: z.array(z.string()).optional(),
  vips: z.array(z.string()).optional(),
  country: z.string().optional(),
  country_city: z.string().optional(),
});

const domainPermSchema = z.object({
  zone: z.string().min(1),
  type: z.enum(['whitelist', 'blacklist']),
  domain: z.string().min(1),
});

const CUSTOMER_ID = 'c_emulator';

export function register(router: Router, ctx: EmulatorContext): void {
  const zones = zoneStateFor(ctx);

  router.post('/zone', async (req, res) => {
    const body = parse(createSchema, await req.json());
    if (zones.get(body.zone.name)) throw new HttpError(409, { error: `Zone "${body.zone.name}" already exists` });
    ctx.stats.countPaid('zone_create');
    zones.add({ name: body.zone.name, type: body.zone.type, plan: body.plan }, ctx.clock.now());
    await ctx.state.commit();
    res.json(201, { name: body.zone.name, type: body.zone.type });
  });

  router.get('/zone/get_active_zones', (_req, res) => {
    res.json(
      200,
      zones.list().map((z) => ({ name: z.name, type: z.type })),
    );
  });

  router.get('/zone/cost', (req, res) => {
    const name = req.query.get('zone');
    if (!name) throw new HttpError(400, { error: 'zone is required' });
    const zone = zones.get(name);
    if (!zone) throw new HttpError(422, { error: `zone "${name}" not found` });
    const from = req.query.get('from');
    const to = req.query.get('to');
    const buckets =
      from === null && to === null
        ? standardBuckets(zones, zone, ctx.clock.now())
        : { custom: customBucket(zones, zone, from, to) };
    res.json(200, { [CUSTOMER_ID]: buckets });
  });

  router.post('/zone/ips/refresh', async (req, res) => {
    const body = parse(refreshSchema, await req.json());
    const zone = zones.get(body.zone);
    if (!zone) throw new HttpError(422, { error: `zone "${body.zone}" not found` });
    if (body.country !== undefined && !/^[a-z]{2}$/.test(body.country))
      throw new HttpError(400, { error: `No IPs available in country "${body.country}"` });
    if (isResidential(zone)) {
      const wanted = body.vips ?? zone.vips.map((v) => v.vip);
      const unknown = wanted.find((v) => !zone.vips.some((x) => x.vip === v));
      if (unknown) throw new HttpError(400, { error: `vip ${unknown} is not allocated to zone "${zone.name}"` });
      ctx.stats.countPaid('ip_refresh');
      const refreshed = wanted.map((old) => {
        const entry = zone.vips.find((x) => x.vip === old)!;
        entry.vip = zones.nextIp(zone);
        if (body.country) entry.country = body.country;
        return { ...entry };
      });
      await ctx.state.commit();
      return res.json(200, { vips: refreshed });
    }
    if (zone.ips.length === 0)
      throw new HttpError(400, { error: `zone "${zone.name}" has no allocated IPs to refresh` });
    const wanted = body.ips ?? [...zone.ips];
    const unknown = wanted.find((ip) => !zone.ips.includes(ip));
    if (unknown) throw new HttpError(400, { error: `ip ${unknown} is not allocated to zone "${zone.name}"` });
    ctx.stats.countPaid('ip_refresh');
    const newIps: string[] = [];
    zone.ips = zone.ips.map((ip) => {
      if (!wanted.includes(ip)) return ip;
      const fresh = zones.nextIp(zone);
      newIps.push(fresh);
      return fresh;
    });
    await ctx.state.commit();
    res.json(200, { ips: zone.ips, new_ips: newIps });
  });

  router.delete('/zone/domain_perm', async (req, res) => {
    const body = parse(domainPermSchema, await req.json());
    const zone = zones.get(body.zone);
    if (!zone) throw new HttpError(422, { error: `zone "${body.zone}" not found` });
    ctx.stats.countPaid('domain_perm');
    const remove = new Set(body.domain.split(' ').filter(Boolean));
    zone[body.type] = zone[body.type].filter((d) => !remove.has(d));
    await ctx.state.commit();
    res.json(200, { [body.type]: zone[body.type].join(' ') });
  });

  // The account's status (docs/service.md §7.6): a call any key may make, which is how a client tells a blocked IP
  // (refused here too) from a key without permission for another call.
  router.get('/status', (req, res) => {
    res.json(200, {
      status: 'active',
      customer: CUSTOMER_ID,
      can_make_requests: true,
      auth_fail_reason: '',
      ip: req.raw.socket.remoteAddress ?? '',
    });
  });

  router.get('/countrieslist', (_req, res) => {
    res.json(200, { zone_types: countries(ctx.options.seed) });
  });
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new HttpError(400, {
    error: 'Validation failed',
    validation_errors: parsed.error.issues.map((i) => `"${i.path.join('.')}" ${i.message}`),
  });
}

// ---- cost ----------------------------------------------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const PERIOD_ERROR = 'You must provide period with both to and from';

interface Bucket {
  cost: number;
  bw?: number;
  reqs_serp?: number;
  reqs_unblocker?: number;
  range: { from: string; to: string };
}

function bucket(zones: ZoneState, zone: ZoneRecord, fromDay: number, toDay: number, range: Bucket['range']): Bucket {
  let cost = 0;
  let bw = 0;
  let reqs = 0;
  for (let d = fromDay; d < toDay; d++) {
    const u = zones.usage(zone, d);
    cost += u.cost;
    bw += u.bw;
    reqs += u.reqs;
  }
  const out: Bucket = { cost: Math.round(cost * 10_000) / 10_000, range };
  // Only buckets with traffic carry `bw` and the request counts, as on the real service (docs/service.md §7.2): a
  // search zone's requests as `reqs_serp`, an unlocker zone's as `reqs_unblocker`.
  if (bw > 0 || reqs > 0) {
    out.bw = bw;
    if (zone.type === 'unblocker') out.reqs_unblocker = reqs;
    else if (isSearch(zone)) out.reqs_serp = reqs;
  }
  return out;
}

function standardBuckets(zones: ZoneState, zone: ZoneRecord, now: number): Record<string, Bucket> {
  const today = Math.floor(now / DAY_MS);
  const d = new Date(now);
  const monthStart = (back: number): Date => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1));
  const out: Record<string, Bucket> = {};
  for (const back of [2, 1, 0]) {
    const start = monthStart(back);
    const next = monthStart(back - 1);
    const toDay = back === 0 ? today + 1 : next.getTime() / DAY_MS;
    out[`back_m${back}`] = bucket(zones, zone, start.getTime() / DAY_MS, toDay, {
      from: monthLabel(start),
      to: monthLabel(next),
    });
  }
  for (const back of [2, 1, 0]) {
    const day = today - back;
    out[`back_d${back}`] = bucket(zones, zone, day, day + 1, { from: dayLabel(day), to: dayLabel(day + 1) });
  }
  return out;
}

function customBucket(zones: ZoneState, zone: ZoneRecord, from: string | null, to: string | null): Bucket {
  const fromDay = parseDay(from);
  const toDay = parseDay(to);
  if (fromDay === undefined || toDay === undefined) throw new HttpError(500, { error: PERIOD_ERROR });
  // `to` is exclusive; an inverted period is empty. Capped so a typo in the year cannot loop for long.
  const end = Math.min(toDay, fromDay + 3_660);
  return bucket(zones, zone, fromDay, end, { from: from as string, to: to as string });
}

function parseDay(s: string | null): number | undefined {
  if (s === null || !/^\d{4}-\d{2}-\d{2}$/.test(s)) return undefined;
  const t = Date.parse(`${s}T00:00:00Z`);
  if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== s) return undefined;
  return t / DAY_MS;
}

function monthLabel(d: Date): string {
  return `${MONTHS[d.getUTCMonth()]}-${d.getUTCFullYear()}`;
}

function dayLabel(day: number): string {
  const d = new Date(day * DAY_MS);
  return `${String(d.getUTCDate()).padStart(2, '0')}-${monthLabel(d)}`;
}

// ---- countries -----------------------------------------------------------------------------------------------------

const COUNTRY_POOL = [
  'us',
  'gb',
  'de',
  'fr',
  'nl',
  'ca',
  'au',
  'jp',
  'br',
  'in',
  'es',
  'it',
  'se',
  'pl',
  'sg',
  'za',
  'mx',
  'tr',
  'il',
  'kr',
  'ch',
  'at',
  'be',
  'dk',
  'fi',
  'ie',
  'no',
  'pt',
  'cz',
  'ro',
];
const ZONE_TYPES = [
  'DC_shared',
  'DC_dedicated_ip',
  'DC_dedicated_host',
  'ISP_shared',
  'ISP_dedicated_ip',
  'ISP_dedicated_host',
] as const;

function countries(seed: number): Record<string, { country_codes: string[] }> {
  const out: Record<string, { country_codes: string[] }> = {};
  for (const t of ZONE_TYPES) {
    const r = serpRng(seed, 'countries', t);
    // Shared pools cover the most countries, dedicated hosts the fewest.
    const n = t.endsWith('shared') ? COUNTRY_POOL.length : t.endsWith('_ip') ? r.int(12, 20) : r.int(5, 10);
    out[t] = {
      country_codes: COUNTRY_POOL.filter((c, i) => i < 3 || (i < n && (n === COUNTRY_POOL.length || r.bool(0.8)))),
    };
  }
  return out;
}
