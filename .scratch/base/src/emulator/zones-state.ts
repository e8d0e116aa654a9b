/**
 * The emulator's zones, shared by the zone routes and `POST /request` (which checks the zone and records its
 * traffic for `GET /zone/cost`). One state per emulator instance, found through the instance's context, so two
 * emulators in one process never share zones.
 *
 * Cost model: a zone's usage is generated per UTC day from (seed, zone, day) for the days since the zone was
 * created, plus the traffic it really served; month buckets sum their days, so day buckets are contained in
 * `back_m0` as on the real service.
 */
import { z } from 'zod';
import type { EmulatorContext } from './context.js';
import { serpRng } from './data/serp-rng.js';

export interface ZoneRecord {
  name: string;
  /** `zone.type` of the creation body (`serp`, `static`, `resident`, `unblocker`, …). */
  type: string;
  plan: Record<string, unknown>;
  /** Emulated epoch ms. */
  createdAt: number;
  ips: string[];
  vips: { vip: string; country: string }[];
  whitelist: string[];
  blacklist: string[];
  /** Served traffic per UTC day number. */
  traffic: Map<number, { reqs: number; bytes: number }>;
  /** Counts IPs handed out, so each refresh gives new ones. */
  ipSerial: number;
}

export interface DayUsage {
  reqs: number;
  bw: number;
  cost: number;
}

export const DAY_MS = 86_400_000;
/** Per request on search zones, per GB elsewhere (US dollars). */
const SERP_COST_PER_REQ = 0.0015;
const COST_PER_GB: Record<string, number> = { static: 0.6, resident: 8.4 };

/** A zone in the state file: the record, with its traffic as `[day, reqs, bytes]` triples. */
const savedZoneSchema = z.object({
  name: z.string(),
  type: z.string(),
  plan: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
  ips: z.array(z.string()),
  vips: z.array(z.object({ vip: z.string(), country: z.string() })),
  whitelist: z.array(z.string()),
  blacklist: z.array(z.string()),
  traffic: z.array(z.tuple([z.number(), z.number(), z.number()])),
  ipSerial: z.number().int().nonnegative(),
});
const savedZonesSchema = z.array(savedZoneSchema);
type SavedZone = z.infer<typeof savedZoneSchema>;

export class ZoneState {
  private readonly zones = new Map<string, ZoneRecord>();

  constructor(
    readonly seed: number,
    now: number,
  ) {
    const created = now - 100 * DAY_MS;
    this.add({ name: 'serp_zone', type: 'serp', plan: { type: 'serp' } }, created);
    const stat = this.add(
      { name: 'static_zone', type: 'static', plan: { type: 'static', ips_type: 'shared', ips: 3, country: 'us' } },
      created,
    );
    stat.whitelist = ['example.com', 'shop.example.org', 'api.example.net'];
    stat.blacklist = ['ads.example.com'];
  }

  /** Every zone as an earlier instance left it (the built-in ones included, with their changes). */
  restore(saved: SavedZone[]): void {
    this.zones.clear();
    for (const zone of saved)
      this.zones.set(zone.name, {
        ...zone,
        traffic: new Map(zone.traffic.map(([day, reqs, bytes]) => [day, { reqs, bytes }])),
      });
  }

  saved(): SavedZone[] {
    return this.list().map((zone) => ({
      ...zone,
      traffic: [...zone.traffic].map(([day, t]): [number, number, number] => [day, t.reqs, t.bytes]),
    }));
  }

  get(name: string): ZoneRecord | undefined {
    return this.zones.get(name);
  }

  list(): ZoneRecord[] {
    return [...this.zones.values()];
  }

  add(spec: { name: string; type: string; plan: Record<string, unknown> }, createdAt: number): ZoneRecord {
    const zone: ZoneRecord = {
      ...spec,
      createdAt,
      ips: [],
      vips: [],
      whitelist: splitDomains(spec.plan.domain_whitelist),
      blacklist: [],
      traffic: new Map(),
      ipSerial: 0,
    };
    const country = typeof spec.plan.country === 'string' && spec.plan.country !== 'any' ? spec.plan.country : 'us';
    if (isResidential(zone)) {
      const n = Math.max(1, Number(spec.plan.vips ?? 1) || 1);
      const vipCountry =
        typeof spec.plan.vip_country === 'string' && spec.plan.vip_country ? spec.plan.vip_country : country;
      zone.vips = Array.from({ length: n }, () => ({ vip: this.nextIp(zone), country: vipCountry }));
    } else if (zone.type === 'static' || spec.plan.type === 'static') {
      const n = Math.max(1, Number(spec.plan.ips ?? 1) || 1);
      zone.ips = Array.from({ length: n }, () => this.nextIp(zone));
    }
    this.zones.set(spec.name, zone);
    return zone;
  }

  /** A fresh address for the zone, different on every call. */
  nextIp(zone: ZoneRecord): string {
    const r = serpRng(this.seed, 'ip', zone.name, zone.ipSerial++);
    return `${r.int(23, 212)}.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`;
  }

  recordTraffic(name: string, bytes: number, now: number): void {
    const zone = this.zones.get(name);
    if (!zone) return;
    const day = Math.floor(now / DAY_MS);
    const t = zone.traffic.get(day) ?? { reqs: 0, bytes: 0 };
    t.reqs++;
    t.bytes += bytes;
    zone.traffic.set(day, t);
  }

  /** Usage of one UTC day (day number since the epoch). */
  usage(zone: ZoneRecord, day: number): DayUsage {
    let reqs = 0;
    let bw = 0;
    if (day >= Math.floor(zone.createdAt / DAY_MS) + 1) {
      const r = serpRng(this.seed, 'zone-day', zone.name, day);
      if (r.bool(0.7)) {
        reqs = r.int(1, 2_000);
        bw = reqs * r.int(20_000, 120_000);
      }
    }
    const live = zone.traffic.get(day);
    if (live) {
      reqs += live.reqs;
      bw += live.bytes;
    }
    const cost = isSearch(zone) ? reqs * SERP_COST_PER_REQ : (bw / 1e9) * (COST_PER_GB[zone.type] ?? 0.6);
    return { reqs, bw, cost };
  }
}

export function isSearch(zone: ZoneRecord): boolean {
  return zone.type === 'serp' || zone.type === 'unblocker';
}

/** A dedicated residential zone answers IP refreshes with `vips`. */
export function isResidential(zone: { type: string; plan: Record<string, unknown> }): boolean {
  return zone.type === 'resident' || zone.plan.type === 'resident';
}

export function splitDomains(v: unknown): string[] {
  return typeof v === 'string' ? v.split(/\s+/).filter(Boolean) : [];
}

const states = new WeakMap<EmulatorContext, ZoneState>();

/**
 * The zone state of one emulator instance (created on first use, from the state file if it has zones). Zone
 * changes are committed by the zone routes; traffic is saved in the background (no client holds an id for it).
 */
export function zoneStateFor(ctx: EmulatorContext): ZoneState {
  let s = states.get(ctx);
  if (!s) {
    const state = new ZoneState(ctx.options.seed, ctx.clock.now());
    const saved = ctx.state.section('zones', savedZonesSchema, () => state.saved());
    if (saved) state.restore(saved);
    states.set(ctx, state);
    s = state;
  }
  return s;
}
