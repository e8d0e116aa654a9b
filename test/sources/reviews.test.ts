import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Row, Source } from '../../src/core/types.js';
import { expectedReviewIds, reviewPageStarts, reviewTotal } from '../../src/emulator/data/reviews.js';
import { serpQueryPlan, type SerpQueryPlan } from '../../src/emulator/data/serp.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { driveCrawl, type DriveResult } from '../support/drive-crawl.js';
import { REVIEWS_PLACES_KEY, type FoundPlaces } from '../../src/sources/crawl/places-from-search.js';
import { REVIEWS_STATE_KEY, parseReviewsUnitId } from '../../src/sources/crawl/review-pages.js';
import { placeFids } from '../../src/sources/crawl/search-pages.js';
import { reviewsSchema, reviewsSource } from '../../src/sources/reviews.js';
import { normalizeReviews } from '../../src/transforms/presets/reviews.js';
import {
  REQUEST_ROUTE,
  quietLogger,
  resetStats,
  sourceContext,
  startHarness,
  stats,
  type Harness,
} from './crawl-harness.js';

const SEED = 11;
const HOST = 'www.google.com';

/** Places with no reviews, a last page exactly full, fewer than one page, and several pages with a short last one. */
function pickFids(): string[] {
  const candidates = Array.from(
    { length: 300 },
    (_, i) => `0x${(i + 1).toString(16).padStart(16, '0')}:0x${'ab'.repeat(8)}`,
  );
  const total = (f: string): number => reviewTotal(SEED, f);
  const picks = [
    candidates.find((f) => total(f) === 0),
    candidates.find((f) => total(f) >= 20 && total(f) % 10 === 0),
    candidates.find((f) => total(f) > 0 && total(f) < 10),
    candidates.find((f) => total(f) > 30 && total(f) % 10 !== 0),
  ];
  if (picks.some((f) => f === undefined)) throw new Error('no candidate fid of some shape: widen the candidates');
  return picks as string[];
}

/** Four queries with a knowledge panel (two of them naming their place on later pages too) and one without. */
function pickSerpQueries(): string[] {
  const candidates = Array.from({ length: 300 }, (_, i) => `place ${i} near me`);
  const plan = (q: string): SerpQueryPlan => serpQueryPlan(SEED, HOST, q);
  const withFid = candidates.filter((q) => plan(q).fid !== undefined);
  const picks = [
    ...withFid.filter((q) => plan(q).knowledgeOnLaterPages).slice(0, 2),
    ...withFid.filter((q) => !plan(q).knowledgeOnLaterPages).slice(0, 2),
    candidates.find((q) => plan(q).fid === undefined && plan(q).total > 0),
  ];
  if (picks.length !== 5 || picks.some((q) => q === undefined)) throw new Error('widen the candidate queries');
  return picks as string[];
}

const FIDS = pickFids();
const SERP_QUERIES = pickSerpQueries();

function reviews(h: Harness, cfg: Record<string, unknown>): Source {
  const config = reviewsSchema.parse({ type: 'reviews', zone: 'serp_zone', max_pages: 100, ...cfg });
  return reviewsSource.create(config, h.deps);
}

/** Review ids per fid, in page order (repeats kept, so a review seen twice shows). */
function idsByFid(result: DriveResult): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const ids = [...result.rows.keys()].sort((a, b) => parseReviewsUnitId(a)!.start - parseReviewsUnitId(b)!.start);
  for (const id of ids) {
    const { fid } = parseReviewsUnitId(id)!;
    const list = out.get(fid) ?? [];
    for (const row of result.rows.get(id)!)
      for (const r of (row.reviews as { review_id: string }[] | undefined) ?? []) list.push(r.review_id);
    out.set(fid, list);
  }
  return out;
}

describe('reviews source', () => {
  let h: Harness;
  beforeAll(async () => {
    // Paging by start, as the service paged reviews before it deprecated start for maps (the switch).
    h = await startHarness({ seed: SEED, latencyMs: 10, reviewPaging: 'start' });
  });
  afterAll(() => h.close());

  it('collects every review of every fid exactly once', async () => {
    await resetStats(h);
    const result = await driveCrawl(reviews(h, { fids: FIDS }), sourceContext(h), { concurrency: 8 });
    expect(result.error).toBeUndefined();
    const got = idsByFid(result);
    for (const fid of FIDS) {
      const ids = got.get(fid) ?? [];
      expect(ids.length, fid).toBe(new Set(ids).size);
      expect([...ids].sort(), fid).toEqual([...expectedReviewIds(SEED, fid)].sort());
    }
    // One request per page; a place may cost one empty page at its end, never more.
    const requests = (await stats(h)).routes[REQUEST_ROUTE] ?? 0;
    expect(requests).toBe(result.committed.length);
  });

  it('builds the reviews target URL with fid, start, brd_json and the optional sort and hl', async () => {
    const source = reviews(h, { fids: [FIDS[0]!], sort: 'newestFirst', hl: 'de' });
    const reported: string[] = [];
    const units = await source.plan(
      sourceContext(h, new MemoryStateStore(), { dryRun: true, report: (_k, t) => reported.push(t) }),
    );
    expect(units.map((u) => u.id)).toEqual([`reviews:${FIDS[0]}:start:0`]);
    expect(reported[0]).toBe(
      `POST /request https://www.google.com/reviews?fid=${encodeURIComponent(FIDS[0]!)}&start=0&sort=newestFirst&hl=de&brd_json=1`,
    );
  });

  it('gives the reviews normalizer fid, offset and fetch time, and checkpoints the next page', async () => {
    const fid = FIDS[3]!; // several pages
    const source = reviews(h, { fids: [fid] });
    const ctx = sourceContext(h);
    const [unit] = await source.plan(ctx);
    expect(unit!.params).toEqual({ fid, start: 0, page: 1, engine: 'https://www.google.com', shard_key: fid });
    const planned = structuredClone(unit!.params);
    const rows: Row[] = [];
    for await (const b of source.read(unit!, ctx)) rows.push(...b);
    expect(rows[0]).toMatchObject({ fid });
    expect(typeof rows[0]!.fetched_at).toBe('string');
    // Reading a unit does not write into its params: the fetch time travels on the row only.
    expect(unit!.params).toEqual(planned);
    const out = normalizeReviews(
      rows[0]!,
      { log: h.deps.log, deadLetter: () => undefined, unitId: unit!.id, unitParams: unit!.params },
      { keepImageData: false },
    );
    expect(out.length).toBe((rows[0]!.reviews as unknown[]).length);
    expect(out.length).toBeGreaterThan(0);
    expect(out[0]).toMatchObject({ fid });
    expect(out[0]!.fetched_at).toEqual(new Date(rows[0]!.fetched_at as string));
    // No pagination block: the next page starts after the reviews this page held.
    const next = source.discover!(unit!, ctx);
    expect(next.map((u) => u.id)).toEqual([`reviews:${fid}:start:${out.length}`]);
    expect(ctx.state.get<Record<string, number[]>>(REVIEWS_STATE_KEY)).toEqual({ [fid]: [0, out.length] });
  });

  it('chains from a SERP crawl: every fid of the knowledge panels, each place’s reviews, SERP pages fetched once', async () => {
    // What the chain should find: the knowledge.fid of each query's first page, asked directly.
    const expectedFids = new Set<string>();
    for (const q of SERP_QUERIES) {
      const url = `https://www.google.com/search?q=${encodeURIComponent(q)}&start=0&brd_json=1`;
      const page = await h.client.request.page({ zone: 'serp_zone', url, format: 'raw' });
      for (const f of placeFids(page.payload as Record<string, unknown>)) expectedFids.add(f);
    }
    expect(expectedFids.size).toBeGreaterThan(0);

    const state = new MemoryStateStore();
    const cfg = { from_serp: { queries: [...SERP_QUERIES, SERP_QUERIES[0]!] }, concurrency: 4 };
    await resetStats(h);
    const first = await driveCrawl(reviews(h, cfg), sourceContext(h, state), { concurrency: 4, stopAfter: 2 });
    expect(first.error).toBeUndefined();
    const found = Object.values(state.get<Record<string, FoundPlaces>>(REVIEWS_PLACES_KEY) ?? {}).flatMap(
      (f) => f.fids,
    );
    expect(new Set(found)).toEqual(expectedFids);

    // The rerun (after a "crash") reads the checkpointed fids: no SERP page is fetched again.
    await resetStats(h);
    const committed = new Set(first.committed);
    const source = reviews(h, cfg);
    const ctx = sourceContext(h, state);
    const planned = await source.plan(ctx);
    expect((await stats(h)).routes[REQUEST_ROUTE] ?? 0).toBe(0);
    expect(new Set(planned.map((u) => parseReviewsUnitId(u.id)!.fid))).toEqual(expectedFids);
    const second = await driveCrawl(source, ctx, { concurrency: 4, committed });
    expect(second.error).toBeUndefined();
    expect(second.committed.filter((id) => committed.has(id))).toEqual([]);

    const all = idsByFid({ ...second, rows: new Map([...first.rows, ...second.rows]) });
    for (const fid of expectedFids) {
      const ids = all.get(fid) ?? [];
      expect(ids.length, fid).toBe(new Set(ids).size);
      expect([...ids].sort(), fid).toEqual([...expectedReviewIds(SEED, fid)].sort());
    }
  });

  it('in a dry run of from_serp fetches nothing and reports the SERP requests it would make', async () => {
    await resetStats(h);
    const reported: { kind: string; text: string }[] = [];
    const units = await reviews(h, { from_serp: { queries: SERP_QUERIES.slice(0, 2) } }).plan(
      sourceContext(h, new MemoryStateStore(), { dryRun: true, report: (kind, text) => reported.push({ kind, text }) }),
    );
    expect(units).toEqual([]);
    expect(reported.filter((r) => r.kind === 'request').map((r) => r.text)).toEqual(
      SERP_QUERIES.slice(0, 2).map(
        (q) =>
          `POST /request https://www.google.com/search?q=${q.replace(/ /g, '+')}&start=0&brd_json=1 (paid: search page read for place ids)`,
      ),
    );
    expect((await stats(h)).routes[REQUEST_ROUTE] ?? 0).toBe(0);
  });

  it('rejects configs that cannot work', () => {
    const base = { type: 'reviews', zone: 'z' };
    const msg = (cfg: object): string =>
      reviewsSchema
        .safeParse(cfg)
        .error?.issues.map((i) => i.message)
        .join('; ') ?? '';
    expect(msg(base)).toMatch(/exactly one of `fids` or `from_serp`/);
    expect(msg({ ...base, fids: ['ChIJ123'] })).toMatch(/0x89c259a9b3117469:0xd134e199a405a163/);
    expect(msg({ ...base, from_serp: {} })).toMatch(/from_serp.queries/);
    expect(msg({ ...base, fids: [FIDS[0]], sort: 'oldest' })).not.toBe('');
    // One review page per place by default: the service answers later pages with the first again (§5.4).
    expect(reviewsSchema.parse({ ...base, fids: [FIDS[0]] })).toMatchObject({ max_pages: 1, concurrency: 8 });
    expect(reviewsSchema.parse({ ...base, from_serp: { queries: ['q'] } }).from_serp).toMatchObject({
      refresh_after: '7d',
    });
    expect(msg({ ...base, from_serp: { queries: ['q'], refresh_after: 'weekly' } })).toMatch(/a duration such as/);
    expect(
      reviewsSource.create(reviewsSchema.parse({ ...base, fids: [FIDS[0]], concurrency: 5 }), h.deps).concurrency,
    ).toBe(5);
  });

  it('a service answering the first page for every start (the default now): one wasted page per place, counted', async () => {
    const warnings: string[] = [];
    const d = await startHarness({ seed: SEED });
    try {
      const deps = { ...d.deps, log: quietLogger(warnings) };
      const src = reviewsSource.create(
        reviewsSchema.parse({ type: 'reviews', zone: 'serp_zone', max_pages: 10, fids: FIDS }),
        deps,
      );
      const ctx = sourceContext({ deps, baseDir: d.baseDir });
      const result = await driveCrawl(src, ctx, { concurrency: 4 });
      await src.close?.();
      expect(result.error).toBeUndefined();
      // Each review once: the first page of each place, never its repeats.
      for (const [fid, ids] of idsByFid(result)) expect(ids).toEqual(expectedReviewIds(SEED, fid).slice(0, 10));
      // A place with reviews is asked for a second page, which repeats the first: not max_pages of them.
      const full = FIDS.filter((f) => reviewTotal(SEED, f) > 0).length;
      const s = await stats(d);
      expect(s.routes[REQUEST_ROUTE]).toBe(FIDS.length + full);
      expect(warnings.filter((w) => /answered the place's first page again/.test(w))).toHaveLength(full);
      expect(warnings).toContain(
        `reviews: ${FIDS.length + full} billed page request(s), ${full} of them answered a page not asked for and not loaded`,
      );
      // The ledger of paid work counts every page billed, the repeats as wasted.
      expect(ctx.paid.figures().paid).toEqual([
        { kind: 'request', for: 'review page', calls: FIDS.length + full, retried: 0, wasted: full },
      ]);
    } finally {
      await d.close();
    }
  });

  it('the default max_pages on that service: one paid page per place, none wasted', async () => {
    const d = await startHarness({ seed: SEED });
    try {
      const src = reviewsSource.create(reviewsSchema.parse({ type: 'reviews', zone: 'serp_zone', fids: FIDS }), d.deps);
      const ctx = sourceContext(d);
      const result = await driveCrawl(src, ctx, { concurrency: 4 });
      expect(result.error).toBeUndefined();
      for (const [fid, ids] of idsByFid(result)) expect(ids).toEqual(expectedReviewIds(SEED, fid).slice(0, 10));
      expect((await stats(d)).routes[REQUEST_ROUTE]).toBe(FIDS.length);
      expect(ctx.paid.figures().paid).toEqual([
        { kind: 'request', for: 'review page', calls: FIDS.length, retried: 0, wasted: 0 },
      ]);
    } finally {
      await d.close();
    }
  });

  it('pages of any size: a place on pages of 10, 9, 10, 10 and an empty one loads every review once', async () => {
    // The emulator as the service was (its defaults), on a day it still paged reviews by start: page sizes vary.
    const d = await startHarness({ seed: SEED, now: Date.parse('2025-01-20T10:00:00Z') });
    try {
      const fid = Array.from({ length: 200_000 }, (_, i) => `0x${(i + 1).toString(16)}:0x${'ef'.repeat(8)}`).find(
        (f) => reviewPageStarts(SEED, f, reviewTotal(SEED, f)).join() === '0,10,19,29,39',
      );
      expect(fid, 'a place whose pages hold 10, 9, 10 and 10 reviews').toBeDefined();
      const src = reviewsSource.create(
        reviewsSchema.parse({ type: 'reviews', zone: 'serp_zone', max_pages: 10, fids: [fid] }),
        d.deps,
      );
      const result = await driveCrawl(src, sourceContext(d), { concurrency: 4 });
      expect(result.error).toBeUndefined();
      const ids = idsByFid(result).get(fid!) ?? [];
      expect(ids).toEqual(expectedReviewIds(SEED, fid!));
      expect(ids).toHaveLength(39);
      // Four pages of reviews and the empty page that ends the place: nothing else tells its end.
      expect((await stats(d)).routes[REQUEST_ROUTE]).toBe(4 + 1);
      expect(result.committed.map((u) => parseReviewsUnitId(u)!.start).sort((a, b) => a - b)).toEqual([
        0, 10, 19, 29, 39,
      ]);
    } finally {
      await d.close();
    }
  });

  it('sluice plan says what ending at an empty page costs: one request more per place', async () => {
    const reported: { kind: string; text: string }[] = [];
    await reviews(h, { fids: FIDS }).plan(
      sourceContext(h, new MemoryStateStore(), { dryRun: true, report: (kind, text) => reported.push({ kind, text }) }),
    );
    expect(reported.filter((r) => r.kind === 'note').map((r) => r.text)).toEqual([
      expect.stringMatching(/^4 places; .* each place .* costs one request more than its pages; /),
    ]);
  });
});
