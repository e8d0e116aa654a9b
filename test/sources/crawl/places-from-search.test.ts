/**
 * `reviews.from_serp` on the real shapes, against the emulator: the places of map search pages (`organic[].fid`),
 * queries that find no place named in a warning, and a search that finds none at all said loudly or, with
 * `on_no_places: fail`, failing the plan before any review page is requested.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../src/core/errors.js';
import type { Source } from '../../../src/core/types.js';
import { mapsPlaceFids, serpQueryPlan } from '../../../src/emulator/data/serp.js';
import { driveCrawl } from '../../support/drive-crawl.js';
import { parseReviewsUnitId } from '../../../src/sources/crawl/review-pages.js';
import { reviewsSchema, reviewsSource } from '../../../src/sources/reviews.js';
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
