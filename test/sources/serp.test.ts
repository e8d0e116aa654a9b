import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import type { Row, Source, WorkUnit } from '../../src/core/types.js';
import { startEmulator } from '../../src/emulator/server.js';
import { expectedOrganicLinks, serpQueryPlan, type SerpQueryPlan } from '../../src/emulator/data/serp.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { driveCrawl, type DriveResult } from '../support/drive-crawl.js';
import { SERP_STATE_KEY, parseSerpUnitId } from '../../src/sources/crawl/search-pages.js';
import { serpSchema, serpSource } from '../../src/sources/serp.js';
import { normalizeSerpOrganic } from '../../src/transforms/presets/serp-organic.js';
import {
  API_KEY,
  REQUEST_ROUTE,
  pagesServed,
  resetStats,
  sourceContext,
  startHarness,
  stats,
  type Harness,
} from './crawl-harness.js';

const SEED = 7;
const HOST = 'www.google.com';

/**
 * Queries covering the shapes a crawl must end correctly on: no results, a last page exactly full, pages without
 * `next_page_start` (only `next_page_link`), a page size other than 10, and two ordinary ones (one with a `:`).
 */
function pickQueries(): string[] {
  const candidates = Array.from({ length: 400 }, (_, i) => `q${i} coffee: roasters`);
  const plan = (q: string): SerpQueryPlan => serpQueryPlan(SEED, HOST, q);
  const picks = [
    candidates.find((q) => plan(q).total === 0),
    candidates.find((q) => plan(q).total > 0 && plan(q).total % plan(q).pageSize === 0),
    candidates.find((q) => plan(q).omitNextStart && plan(q).total > 3 * plan(q).pageSize),
    candidates.find((q) => plan(q).pageSize !== 10 && plan(q).total > plan(q).pageSize),
    'coffee roasters portland',
    'ramen berlin',
  ];
  if (picks.some((q) => q === undefined)) throw new Error('no candidate query of some shape: widen the candidates');
  return [...new Set(picks as string[])];
}

const QUERIES = pickQueries();
const expectedLinks = (q: string): string[] => expectedOrganicLinks(SEED, HOST, q);

function serp(h: Harness, cfg: Record<string, unknown>): Source {
  const config = serpSchema.parse({ type: 'serp', zone: 'serp_zone', queries: QUERIES, max_pages: 50, ...cfg });
  return serpSource.create(config, h.deps);
}

/** Links of a page's organic results (`organic` and `oragnic` merged, each link once per page). */
function pageLinks(row: Row): string[] {
  const links = new Set<string>();
  for (const key of ['organic', 'oragnic'])
    for (const item of (row[key] as { link?: string }[] | undefined) ?? []) if (item.link) links.add(item.link);
  return [...links];
}

/** Per query: its pages' start offsets in order, and every organic link across the pages (repeats kept). */
function byQuery(result: DriveResult): Map<string, { starts: number[]; links: string[] }> {
  const out = new Map<string, { starts: number[]; links: string[] }>();
  const ids = [...result.rows.keys()].sort((a, b) => parseSerpUnitId(a)!.start - parseSerpUnitId(b)!.start);
  for (const id of ids) {
    const { query, start } = parseSerpUnitId(id)!;
    const entry = out.get(query) ?? { starts: [], links: [] };
    entry.starts.push(start);
    for (const row of result.rows.get(id)!) entry.links.push(...pageLinks(row));
    out.set(query, entry);
  }
  return out;
}

describe('serp source', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ seed: SEED, latencyMs: 20 });
  });
  afterAll(() => h.close());

  it('crawls every query to exactly its last page, each organic result once, one request per page', async () => {
    await resetStats(h);
    const ctx = sourceContext(h);
    const result = await driveCrawl(serp(h, { concurrency: 8 }), ctx, { concurrency: 16 });
    expect(result.error).toBeUndefined();
    const seen = byQuery(result);
    const pageCounts = new Set<number>();
    for (const q of QUERIES) {
      const expected = expectedLinks(q);
      const got = seen.get(q) ?? { starts: [0], links: [] };
      expect(got.links.length, q).toBe(new Set(got.links).size); // no result twice
      expect([...got.links].sort(), q).toEqual([...expected].sort());
      pageCounts.add(got.starts.length);
    }
    // The queries have different result counts, so their crawls end after different numbers of pages.
    expect(pageCounts.size).toBeGreaterThan(1);
    // Nothing fetched beyond a last page, nothing fetched twice.
    expect((await stats(h)).routes[REQUEST_ROUTE]).toBe(result.committed.length);
    expect(ctx.counters.bytes).toBeGreaterThan(0);
  });

  it('stops at max_pages', async () => {
    const result = await driveCrawl(serp(h, { max_pages: 2 }), sourceContext(h), { concurrency: 8 });
    const seen = byQuery(result);
    for (const q of QUERIES) {
      const total = expectedLinks(q).length;
      const pages = seen.get(q)?.starts.length ?? 0;
      expect(pages, q).toBeLessThanOrEqual(2);
      if (total > 0 && seen.get(q)!.links.length < total) expect(pages, q).toBe(2);
    }
  });

  it('gives normalizers the page context through the unit params and the fetch time on the row', async () => {
    const q = QUERIES[2]!; // several pages, no next_page_start
    const source = serp(h, { queries: [q], max_pages: 2 });
    const ctx = sourceContext(h);
    const units = await source.plan(ctx);
    expect(units.map((u) => u.id)).toEqual([`serp:www.google.com:${encodeURIComponent(q)}:start:0`]);
    expect(units[0]!.id).toContain('%3A'); // the query's colon cannot be mistaken for a separator
    const unit = units[0]!;
    expect(unit.params).toEqual({ query: q, start: 0, page: 1, engine: 'https://www.google.com', shard_key: q });
    const planned = structuredClone(unit.params);
    const rows: Row[] = [];
    for await (const b of source.read(unit, ctx)) rows.push(...b);
    expect(rows).toHaveLength(1);
    expect(typeof rows[0]!.fetched_at).toBe('string');
    // Reading a unit does not write into its params: the fetch time travels on the row only.
    expect(unit.params).toEqual(planned);
    const organic = normalizeSerpOrganic(
      rows[0]!,
      { log: h.deps.log, deadLetter: () => undefined, unitId: unit.id, unitParams: unit.params },
      { keepImageData: false },
    );
    expect(organic.length).toBeGreaterThan(0);
    expect(organic[0]).toMatchObject({ query: q, page: 1, start: 0 });
    expect(organic[0]!.fetched_at).toEqual(new Date(rows[0]!.fetched_at as string));
    const next = source.discover!(unit, ctx);
    expect(next).toHaveLength(1);
    // The page size is read from the page (it is not always 10).
    expect(next[0]!.params).toMatchObject({ query: q, page: 2, start: serpQueryPlan(SEED, HOST, q).pageSize });
    expect(ctx.state.get<Record<string, number[]>>(SERP_STATE_KEY)).toEqual({
      [`serp:www.google.com:${encodeURIComponent(q)}`]: [0, serpQueryPlan(SEED, HOST, q).pageSize],
    });
  });

  it('refresh_after: the fetch time is the service’s (its Date), "now" the run clock (ctx.now): not this machine’s', async () => {
    const DAY = 86_400_000;
    const night = Date.parse('2031-06-01T02:30:00Z'); // years from this machine's clock: a mixed-up clock shows
    const service = await startHarness({ seed: SEED, now: night });
    try {
      const q = QUERIES[4]!;
      const refreshing = (): Source => serp(service, { queries: [q], max_pages: 1, refresh_after: '7d' });
      const first = refreshing();
      const result = await driveCrawl(first, sourceContext(service), { concurrency: 1 });
      expect(result.error).toBeUndefined();
      const [unit] = result.committed;
      const fetchedAt = Date.parse(result.rows.get(unit!)![0]!.fetched_at as string);
      expect(fetchedAt - night).toSatisfy((d: number) => d >= 0 && d < 60_000);
      const checkpoint = result.checkpoints.get(unit!);
      expect(checkpoint).toEqual({ query: q, fetched_at: new Date(fetchedAt).toISOString() });

      const planAt = (at: number): Promise<WorkUnit[]> =>
        refreshing().plan(
          sourceContext(service, undefined, { now: () => at, checkpoints: new Map([[unit!, checkpoint]]) }),
        );
      expect(await planAt(night + DAY)).toEqual([]);
      expect((await planAt(night + 8 * DAY)).map((u) => u.id)).toEqual([unit]);
    } finally {
      await service.close();
    }
  });

  it('tells the engine its concurrency from the config (default 8)', () => {
    expect(serp(h, { concurrency: 3 }).concurrency).toBe(3);
    expect(serp(h, {}).concurrency).toBe(8);
  });

  it('never has more requests in flight than `concurrency`, even when the engine runs more units', async () => {
    await resetStats(h);
    const result = await driveCrawl(serp(h, { concurrency: 3 }), sourceContext(h), { concurrency: 16 });
    expect(result.error).toBeUndefined();
    const s = await stats(h);
    expect(s.routeMaxInFlight[REQUEST_ROUTE]).toBeLessThanOrEqual(3);
    expect(s.routeMaxInFlight[REQUEST_ROUTE]).toBeGreaterThan(1); // the requests did overlap
  });

  it('at concurrency 64: 20 requests in flight at most (the 429 budget), reached after a slow start', async () => {
    // The engine creates the client without `connections` unless the pipeline sets it: its pool must not cap a crawl
    // below what the client's one 429 budget allows (client/throttle.ts): 4 in flight at first, doubling per round
    // trip, up to the 20 that — were every one answered 429 — still keep the IP from the service's block at 25.
    const emu = await startEmulator({ seed: SEED, apiKey: API_KEY, latencyMs: 200 });
    const client = createClient({ baseUrl: emu.url, apiKey: API_KEY });
    try {
      const queries = Array.from({ length: 60 }, (_, i) => `in flight ${i}`);
      const config = serpSchema.parse({ type: 'serp', zone: 'serp_zone', queries, max_pages: 1, concurrency: 64 });
      const source = serpSource.create(config, { ...h.deps, client: async () => client });
      const result = await driveCrawl(source, sourceContext(h), { concurrency: 64 });
      expect(result.error).toBeUndefined();
      expect(result.committed).toHaveLength(60);
      // Never above the budget; well above the first wave of 4 (the pool and the engine did not cap it).
      expect(emu.stats.routeMaxInFlight[REQUEST_ROUTE]).toBeLessThanOrEqual(20);
      expect(emu.stats.routeMaxInFlight[REQUEST_ROUTE]).toBeGreaterThanOrEqual(16);
    } finally {
      await client.close();
      await emu.close();
    }
  });

  it('resumes a failed crawl fetching only the pages not committed', async () => {
    const full = await driveCrawl(serp(h, {}), sourceContext(h), { concurrency: 8 });
    const state = new MemoryStateStore();
    const first = await driveCrawl(serp(h, { concurrency: 4 }), sourceContext(h, state), {
      concurrency: 4,
      stopAfter: 6,
    });
    expect(first.committed.length).toBeGreaterThanOrEqual(6);
    expect(first.committed.length).toBeLessThan(full.committed.length);

    await resetStats(h);
    const committed = new Set(first.committed);
    const second = await driveCrawl(serp(h, { concurrency: 4 }), sourceContext(h, state), {
      concurrency: 4,
      committed,
    });
    expect(second.error).toBeUndefined();
    // Exactly the missing pages are requested: no committed page again, no page twice.
    expect(second.committed.filter((id) => committed.has(id))).toEqual([]);
    expect((await stats(h)).routes[REQUEST_ROUTE]).toBe(full.committed.length - first.committed.length);
    expect(new Set([...first.committed, ...second.committed])).toEqual(new Set(full.committed));
    const all: DriveResult = { ...second, rows: new Map([...first.rows, ...second.rows]) };
    for (const q of QUERIES) {
      const links = byQuery(all).get(q)?.links ?? [];
      expect([...links].sort(), q).toEqual([...expectedLinks(q)].sort());
    }
  });

  it('survives a burst of 429s with no page lost and none fetched again after it succeeded', async () => {
    const faulty = await startHarness({
      seed: SEED,
      latencyMs: 5,
      faults: {
        rules: [
          {
            route: REQUEST_ROUTE,
            rate: 0.5,
            faults: { '429': 1, '429_retry_after': 1 },
            // The client holds every request for a Retry-After (client/throttle.ts): none, to keep the test quick.
            retry_after_s: 0,
            max_per_route: 10,
          },
        ],
      },
    });
    try {
      const ctx = sourceContext(faulty);
      const result = await driveCrawl(serp(faulty, { concurrency: 4, rate_limit: '40/s' }), ctx, { concurrency: 4 });
      expect(result.error).toBeUndefined();
      const s = await stats(faulty);
      expect((s.faults['429'] ?? 0) + (s.faults['429_retry_after'] ?? 0)).toBe(10);
      expect(pagesServed(s)).toBe(result.committed.length);
      for (const q of QUERIES) {
        const links = byQuery(result).get(q)?.links ?? [];
        expect([...links].sort(), q).toEqual([...expectedLinks(q)].sort());
      }
    } finally {
      await faulty.close();
    }
  });

  it('plans from a queries file and, in a dry run, fetches nothing and reports the requests', async () => {
    fs.writeFileSync(
      path.join(h.baseDir, 'queries.csv'),
      'query,notes\nramen berlin,x\n"coffee, tea",y\nramen berlin,z\n',
    );
    await resetStats(h);
    const reported: string[] = [];
    const source = serpSource.create(
      serpSchema.parse({ type: 'serp', zone: 'z', queries_file: 'queries.csv', params: { hl: 'en', gl: 'us' } }),
      h.deps,
    );
    const units: WorkUnit[] = await source.plan(
      sourceContext(h, new MemoryStateStore(), { dryRun: true, report: (_k, t) => reported.push(t) }),
    );
    expect(units.map((u) => u.id)).toEqual([
      'serp:www.google.com:ramen%20berlin:start:0',
      'serp:www.google.com:coffee%2C%20tea:start:0',
    ]);
    expect(reported[0]).toBe(
      'POST /request https://www.google.com/search?q=ramen+berlin&start=0&hl=en&gl=us&brd_json=1',
    );
    expect(reported.join('\n')).not.toMatch(/num=/);
    expect((await stats(h)).routes[REQUEST_ROUTE] ?? 0).toBe(0);
  });

  it('reads the json envelope format the same as raw', async () => {
    const one = { queries: [QUERIES[1]!], max_pages: 1 };
    const raw = await driveCrawl(serp(h, { ...one, format: 'raw' }), sourceContext(h), { concurrency: 1 });
    const json = await driveCrawl(serp(h, { ...one, format: 'json' }), sourceContext(h), { concurrency: 1 });
    expect(json.error).toBeUndefined();
    const links = (r: DriveResult): string[] => [...r.rows.values()].flat().flatMap(pageLinks);
    expect(links(json)).toEqual(links(raw));
    expect(links(json).length).toBeGreaterThan(0);
  });

  it('rejects configs that cannot work, saying what to write', () => {
    const base = { type: 'serp', zone: 'z' };
    const msg = (cfg: object): string =>
      serpSchema
        .safeParse(cfg)
        .error?.issues.map((i) => i.message)
        .join('; ') ?? '';
    expect(msg({ ...base })).toMatch(/exactly one of `queries` or `queries_file`/);
    expect(msg({ ...base, queries: ['a'], queries_file: 'q.txt' })).toMatch(/exactly one/);
    expect(msg({ ...base, queries: ['a'], rate_limit: 'fast' })).toMatch(/"20\/s"/);
    expect(msg({ ...base, queries: ['a'], params: { num: 100 } })).toMatch(/num is deprecated/);
    expect(msg({ ...base, queries: ['a'], engine: 'google' })).toMatch(/http\(s\) URL/);
    expect(msg({ ...base, queries: ['a'], pages: 3 })).toMatch(/pages/);
    expect(serpSchema.parse({ ...base, queries: ['a'] })).toMatchObject({
      engine: 'https://www.google.com',
      max_pages: 5,
      concurrency: 8,
      format: 'raw',
    });
  });
});
