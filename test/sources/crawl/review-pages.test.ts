import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectedReviewIds,
  hasShortPageBeforeLast,
  reviewPageSizes,
  reviewPageStarts,
  reviewTotal,
} from '../../../src/emulator/data/reviews.js';
import { MemoryStateStore } from '../../../src/state/state-store.js';
import { pagePayload, type PagePosition } from '../../../src/sources/crawl/pager.js';
import {
  REVIEWS_FIRST_IDS_KEY,
  REVIEWS_STATE_KEY,
  nextReviewsPage,
  parseReviewsUnitId,
  reviewPages,
  reviewsUnitId,
} from '../../../src/sources/crawl/review-pages.js';
import { quietLogger, sourceContext, startHarness, type Harness } from '../crawl-harness.js';

const FID = '0x89c259a9b3117469:0xd134e199a405a163';
const reviewsOf = (n: number): { reviews: { review_id: string }[] } => ({
  reviews: Array.from({ length: n }, (_, i) => ({ review_id: `r${i}` })),
});

describe('nextReviewsPage', () => {
  it('advances by the reviews on the page, whatever their number, and stops on an empty page or at max_pages', () => {
    expect(nextReviewsPage(10, 0, 1, 10)).toEqual({ next: 10 });
    // A page shorter than the one before is the service's page size varying, not the end.
    expect(nextReviewsPage(9, 10, 2, 10)).toEqual({ next: 19 });
    expect(nextReviewsPage(3, 19, 3, 10)).toEqual({ next: 22 });
    expect(nextReviewsPage(0, 22, 4, 10)).toEqual({ stop: 'empty_page' });
    expect(nextReviewsPage(8, 72, 10, 10)).toEqual({ stop: 'max_pages' });
  });
});

describe('reviews unit ids', () => {
  it('keeps the fid as it is in review unit ids', () => {
    expect(reviewsUnitId(FID, 10)).toBe(`reviews:${FID}:start:10`);
    expect(parseReviewsUnitId(reviewsUnitId(FID, 10))).toEqual({ fid: FID, start: 10 });
  });
});

describe('reviewPages (pager strategy)', () => {
  const at: PagePosition = { subject: FID, start: 10, page: 2 };

  it('names a page by fid and offset and asks for it with sort and hl when set', () => {
    const pager = reviewPages({ engine: 'https://www.google.com', sort: 'newestFirst', hl: 'de' });
    expect(pager).toMatchObject({ name: 'reviews', stateKey: REVIEWS_STATE_KEY, subjectParam: 'fid' });
    expect(pager.unitId(at)).toBe(`reviews:${FID}:start:10`);
    expect(pager.chainKey(FID)).toBe(FID);
    expect(pager.url(at)).toBe(
      `https://www.google.com/reviews?fid=${encodeURIComponent(FID)}&start=10&sort=newestFirst&hl=de&brd_json=1`,
    );
    expect(reviewPages({ engine: 'https://www.google.com' }).url(at)).toBe(
      `https://www.google.com/reviews?fid=${encodeURIComponent(FID)}&start=10&brd_json=1`,
    );
  });

  it('yields the page with its fid and fetch time (a review page does not name its place)', () => {
    const pager = reviewPages({ engine: 'https://www.google.com' });
    expect(pager.row(reviewsOf(1), at, '2025-01-02T03:04:05.000Z')).toEqual({
      ...reviewsOf(1),
      fid: FID,
      fetched_at: '2025-01-02T03:04:05.000Z',
    });
  });

  it('a later page holding only reviews of the first page is the first page answered again (kept in state)', async () => {
    const pager = reviewPages({ engine: 'https://www.google.com' });
    const h = { deps: { log: quietLogger() }, baseDir: '.' };
    const state = new MemoryStateStore();
    const ctx = sourceContext(h, state);
    expect(await pager.wrongPage!(reviewsOf(10), { subject: FID, start: 0, page: 1 }, ctx)).toBeUndefined();
    expect(state.get(REVIEWS_FIRST_IDS_KEY)).toEqual({ [FID]: reviewsOf(10).reviews.map((r) => r.review_id) });
    expect(await pager.wrongPage!(reviewsOf(10), { subject: FID, start: 10, page: 2 }, ctx)).toMatch(
      /answered the place's first page again for start 10/,
    );
    // A page with one review the first page did not have is a page of its own; an empty page says nothing.
    const next = { reviews: [...reviewsOf(9).reviews, { review_id: 'new' }] };
    expect(await pager.wrongPage!(next, { subject: FID, start: 10, page: 2 }, ctx)).toBeUndefined();
    expect(await pager.wrongPage!(reviewsOf(0), { subject: FID, start: 10, page: 2 }, ctx)).toBeUndefined();
    // Another place's first page is another place's.
    expect(await pager.wrongPage!(reviewsOf(10), { subject: '0x1:0x2', start: 10, page: 2 }, ctx)).toBeUndefined();
  });

  it('a later page holding only reviews of the page before it is that page answered again', async () => {
    const pager = reviewPages({ engine: 'https://www.google.com' });
    const ctx = sourceContext({ deps: { log: quietLogger() }, baseDir: '.' });
    const page = (from: number, n: number): { reviews: { review_id: string }[] } => ({
      reviews: Array.from({ length: n }, (_, i) => ({ review_id: `r${from + i}` })),
    });
    expect(await pager.wrongPage!(page(0, 10), { subject: FID, start: 0, page: 1 }, ctx)).toBeUndefined();
    expect(await pager.wrongPage!(page(10, 9), { subject: FID, start: 10, page: 2 }, ctx)).toBeUndefined();
    // The same page read again (a unit retried) is compared with the page before it, not with itself.
    expect(await pager.wrongPage!(page(10, 9), { subject: FID, start: 10, page: 2 }, ctx)).toBeUndefined();
    expect(await pager.wrongPage!(page(10, 9), { subject: FID, start: 19, page: 3 }, ctx)).toMatch(
      /answered the page at start 10 again for start 19/,
    );
    // A page of its own moves the comparison on.
    expect(await pager.wrongPage!(page(19, 10), { subject: FID, start: 19, page: 3 }, ctx)).toBeUndefined();
    expect(await pager.wrongPage!(page(29, 10), { subject: FID, start: 29, page: 4 }, ctx)).toBeUndefined();
  });

  describe('on the emulator', () => {
    const SEED = 11;
    let h: Harness;
    beforeAll(async () => {
      // Paging by start, as the service paged reviews before it deprecated start for maps (the switch).
      h = await startHarness({ seed: SEED, reviewPaging: 'start' });
    });
    afterAll(() => h.close());

    /** Offsets of the pages the pager asks for, and the review ids it collects, walking one place's chain. */
    async function walk(fid: string): Promise<{ starts: number[]; ids: string[] }> {
      const pager = reviewPages({ engine: 'https://www.google.com' });
      const ctx = sourceContext(h);
      const starts: number[] = [];
      const ids: string[] = [];
      for (let pos: PagePosition = { subject: fid, start: 0, page: 1 }; ;) {
        starts.push(pos.start);
        const res = await h.client.request.page({ zone: 'serp_zone', url: pager.url(pos), format: 'raw' });
        const payload = pagePayload(res.payload, pager.unitId(pos));
        for (const r of payload.reviews as { review_id: string }[]) ids.push(r.review_id);
        const outcome = await pager.next(payload, pos, 100, ctx);
        if ('stop' in outcome) break;
        pos = { subject: fid, start: outcome.next, page: pos.page + 1 };
      }
      return { starts, ids };
    }

    it('ends a place only at the empty page after its last: every review once, pages of any size', async () => {
      const candidates = Array.from(
        { length: 300 },
        (_, i) => `0x${(i + 1).toString(16).padStart(16, '0')}:0x${'cd'.repeat(8)}`,
      );
      const starts = (f: string): number[] => reviewPageStarts(SEED, f, reviewTotal(SEED, f));
      const sizes = (f: string): number[] => reviewPageSizes(SEED, f, reviewTotal(SEED, f));
      // A place with a page shorter than 10 before its last, and one whose last page is exactly full.
      const uneven = candidates.find((f) => hasShortPageBeforeLast(SEED, f, reviewTotal(SEED, f)))!;
      const full = candidates.find((f) => reviewTotal(SEED, f) >= 20 && sizes(f).every((n) => n === 10))!;
      expect(uneven).toBeDefined();
      expect(full).toBeDefined();
      for (const fid of [uneven, full]) {
        const walked = await walk(fid);
        expect(walked.starts, fid).toEqual(starts(fid));
        expect(walked.ids, fid).toEqual(expectedReviewIds(SEED, fid));
      }
    });
  });
});
