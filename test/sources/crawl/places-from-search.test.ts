/**
 * `reviews.from_serp` on the real shapes, against the emulator: the places of map search pages (`organic[].fid`),
 * queries that find no place named in a warning, a search that finds none at all said loudly or, with
 * `on_no_places: fail`, failing the plan before any review page is requested; and the places a search found kept
 * and used again until `refresh_after` has passed, each search in the ledger of paid work when it is made.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../src/core/errors.js';
import type { Source } from '../../../src/core/types.js';
import { mapsPlaceFids, serpQueryPlan } from '../../../src/emulator/data/serp.js';
import { driveCrawl } from '../../support/drive-crawl.js';
import { parseReviewsUnitId } from '../../../src/sources/crawl/review-pages.js';
import { reviewsSchema, reviewsSource } from '../../../src/sources/reviews.js';
import { MemoryStateStore } from '../../../src/state/state-store.js';
import { REQUEST_ROUTE, resetStats, sourceContext, startHarness, stats, type Harness } from '../crawl-harness.js';

const SEED = 17;
const HOST = 'www.google.com';
const candidates = Array.from({ length: 200 }, (_, i) => `hotels in town ${i}`);
const WITH_PLACES = candidates.filter((q) => mapsPlaceFids(SEED, HOST, q).length >= 2).slice(0, 2);
const NO_PLACE = candidates.find((q) => mapsPlaceFids(SEED, HOST, q).length === 0)!;
/** Web queries without a knowledge panel: their result pages name no place. */
const NO_PANEL = candidates.filter((q) => serpQueryPlan(SEED, HOST, q).fid === undefined).slice(0, 2);

function reviews(h: Harness, fromSerp: Record<string, unknown>): Source {
  const config = reviewsSchema.parse({ type: 'reviews', zone: 'serp_zone', max_pages: 1, from_serp: fromSerp });
  return reviewsSource.create(config, h.deps);
}

describe('from_serp on map search pages and searches that find nothing', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ seed: SEED });
  });
  afterAll(async () => h.close());

  it('takes every place of a map search page (organic[].fid) and names the query that found none', async () => {
    expect(WITH_PLACES).toHaveLength(2);
    h.warnings.length = 0;
    const src = reviews(h, { search: 'maps', queries: [...WITH_PLACES, NO_PLACE] });
    const result = await driveCrawl(src, sourceContext(h));
    expect(result.error).toBeUndefined();
    const expected = WITH_PLACES.flatMap((q) => mapsPlaceFids(SEED, HOST, q));
    const crawled = [...new Set(result.committed.map((id) => parseReviewsUnitId(id)!.fid))];
    expect(crawled.sort()).toEqual([...new Set(expected)].sort());
    expect(h.warnings.join('\n')).toContain(`1 of 3 queries found no place: ${JSON.stringify(NO_PLACE)}`);
  });

  it('a search that finds no place at all warns loudly by default, naming the queries and the fix', async () => {
    h.warnings.length = 0;
    const src = reviews(h, { queries: NO_PANEL });
    const result = await driveCrawl(src, sourceContext(h));
    expect(result.error).toBeUndefined();
    expect(result.committed).toEqual([]);
    const warning = h.warnings.find((w) => w.includes('found no place'));
    expect(warning).toMatch(/NO reviews will be loaded/);
    expect(warning).toContain(JSON.stringify(NO_PANEL[0]));
    expect(warning).toMatch(/from_serp\.search: maps/);
  });

  it('with on_no_places: fail the plan fails before any review page is requested', async () => {
    await resetStats(h);
    const src = reviews(h, { search: 'maps', queries: [NO_PLACE], on_no_places: 'fail' });
    const err = await src.plan(sourceContext(h)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/found no place on the maps result pages/);
    expect((err as SluiceError).hint).toMatch(/on_no_places: warn/);
    // The one map search page only: no review page.
    expect((await stats(h)).routes[REQUEST_ROUTE]).toBe(1);
  });
});

describe('from_serp: the places a search found, kept until refresh_after', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ seed: SEED });
  });
  afterAll(async () => h.close());

  const HOUR = 3_600_000;

  it('a later run uses the kept places without a search until refresh_after has passed, then searches again', async () => {
    expect(WITH_PLACES).toHaveLength(2);
    const state = new MemoryStateStore();
    const t0 = Date.parse('2025-03-01T02:30:00Z');
    const fromSerp = { search: 'maps', queries: WITH_PLACES, refresh_after: '3d' };
    const plan = async (at: number, dryRun = false) => {
      await resetStats(h);
      const notes: string[] = [];
      const requests: string[] = [];
      const ctx = sourceContext(h, state, {
        now: () => at,
        dryRun,
        report: (kind, text) => (kind === 'note' ? notes : requests).push(text),
      });
      // Each plan is an attempt of one run here (one state): what it paid is what its ledger gained.
      const before = ctx.paid.figures().paidCalls;
      const units = await reviews(h, fromSerp).plan(ctx);
      const searched = (await stats(h)).routes[REQUEST_ROUTE] ?? 0;
      const searches = requests.filter((r) => r.includes('/maps/search/'));
      return { units: units.map((u) => u.id), searched, paid: ctx.paid.figures().paidCalls - before, notes, searches };
    };
    const first = await plan(t0);
    expect(first.searched).toBe(2);
    expect(first.paid).toBe(2);
    expect(sourceContext(h, state).paid.figures().paid).toEqual([
      { kind: 'request', for: 'from_serp map search page', calls: 2, retried: 0, wasted: 0 },
    ]);
    // The next night, and the one after: the same places, no search paid.
    for (const at of [t0 + 24 * HOUR, t0 + 71 * HOUR]) {
      const later = await plan(at);
      expect(later.searched).toBe(0);
      expect(later.paid).toBe(0);
      expect(later.units).toEqual(first.units);
    }
    // `sluice plan` says so, and lists no search request.
    const dry = await plan(t0 + 48 * HOUR, true);
    expect(dry.searches).toEqual([]);
    expect(dry.notes).toContainEqual(
      'from_serp: the places of 2 of 2 queries are reused from searches made since 2025-03-01T02:30:00.000Z ' +
        '(no search request: they are searched again after refresh_after 3d, from 2025-03-04T02:30:00.000Z)',
    );
    // Three days on: searched again, paid again.
    const refreshed = await plan(t0 + 72 * HOUR);
    expect(refreshed.searched).toBe(2);
    expect(refreshed.paid).toBe(2);
    expect(refreshed.units).toEqual(first.units);
    // Past it, a dry run names the searches a run would pay for.
    const due = await plan(t0 + 150 * HOUR, true);
    expect(due.searches).toHaveLength(2);
    expect(due.searches[0]).toMatch(/^POST \/request .*\/maps\/search\/.* \(paid: search page read for place ids\)$/);
  });

  it('another search (a parameter changed) is made anew, the other query’s places kept', async () => {
    const state = new MemoryStateStore();
    const at = Date.parse('2025-03-01T02:30:00Z');
    const ctx = () => sourceContext(h, state, { now: () => at });
    await reviews(h, { search: 'maps', queries: WITH_PLACES }).plan(ctx());
    await resetStats(h);
    await reviews(h, { search: 'maps', queries: WITH_PLACES, params: { hl: 'de' } }).plan(ctx());
    expect((await stats(h)).routes[REQUEST_ROUTE]).toBe(2);
    await resetStats(h);
    await reviews(h, { search: 'maps', queries: [WITH_PLACES[0]!], params: { hl: 'de' } }).plan(ctx());
    expect((await stats(h)).routes[REQUEST_ROUTE] ?? 0).toBe(0);
  });
});
