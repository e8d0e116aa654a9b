import { describe, expect, it } from 'vitest';
import { reviewsBackfill, serpBackfill } from '../../../src/sources/crawl/backfill.js';
import { countedCheckpoints, type ReviewsCheckpoint } from '../../../src/sources/crawl/review-pages.js';

describe('crawl backfills', () => {
  it('take a date after --from, and refuse --to, a value not a date, and a crawl without a cursor', () => {
    expect(reviewsBackfill({ incremental: true }, { from: '2025-03-01' })).toEqual({
      of: 'date',
      from: '2025-03-01T00:00:00.000Z',
    });
    expect(serpBackfill({ refresh_after: '7d' }, { from: '2025-03-01T06:00:00+01:00' })).toEqual({
      of: 'fetched_at',
      from: '2025-03-01T05:00:00.000Z',
    });
    expect(() => reviewsBackfill({ incremental: false }, { from: '2025-03-01' })).toThrow(/not incremental/);
    expect(() => serpBackfill({}, { from: '2025-03-01' })).toThrow(/no `refresh_after`/);
    expect(() => reviewsBackfill({ incremental: true }, { from: '2025-03-01', to: '2025-03-08' })).toThrow(
      /--to: a backfill of the places' reviews has no end/,
    );
    expect(() => serpBackfill({ refresh_after: '1d' }, { from: 'yesterday' })).toThrow(/not an ISO 8601 date/);
    // Off the calendar (Date.parse: March 2nd) or without an offset (Date.parse: the machine's zone): refused.
    expect(() => reviewsBackfill({ incremental: true }, { from: '2025-02-30' })).toThrow(
      /--from "2025-02-30": 2025-02-30 is not a day of the calendar/,
    );
    expect(() => serpBackfill({ refresh_after: '1d' }, { from: '2025-03-01 06:00' })).toThrow(/without its UTC offset/);
  });

  it("count a backfill's review pages only where the window joins the nightly ones, and always the nightly pages they replaced", () => {
    const nightly = (fid: string, newest: string, ids: string[]): ReviewsCheckpoint => ({ fid, ids, newest });
    const marked = (cp: ReviewsCheckpoint, from: string, replaced?: ReviewsCheckpoint): ReviewsCheckpoint => ({
      ...cp,
      backfill: { from },
      ...(replaced && { nightly: replaced }),
    });
    const a1 = nightly('a', '2025-03-01', ['a1']);
    const counted = countedCheckpoints([
      marked(nightly('a', '2025-03-09', ['a3', 'a2']), '2025-03-05T00:00:00.000Z', a1), // starts after: a gap
      marked(nightly('b', '2025-03-09', ['b2']), '2025-02-01T00:00:00.000Z'), // joins b's nightly page
      nightly('b', '2025-03-01', ['b1']),
      marked(nightly('c', '2025-03-09', ['c1']), '2025-02-01T00:00:00.000Z'), // no nightly run loaded c
    ]);
    expect(counted.map((c) => c.ids.join())).toEqual(['a1', 'b1', 'b2']);
  });
});
