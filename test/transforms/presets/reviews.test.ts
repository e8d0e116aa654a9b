import { describe, expect, it } from 'vitest';
import { DateOnly } from '../../../src/core/values.js';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import {
  REVIEW_ASPECT_COLUMNS,
  REVIEW_TEXT_DETAIL_COLUMNS,
  parseRating,
} from '../../../src/transforms/presets/reviews.js';
import { build, detail, review, reviewsPage, run } from '../fixtures.js';

const reviews = () => build(normalizeTransform, { type: 'normalize', preset: 'reviews' });
const FID = '0x1234abcd:0xdeadbeef';
const FETCHED = '2025-03-15T12:00:00.000Z';
const params = { unitParams: { fid: FID, start: 10 } };
/** A reviews page as the crawl yields it: the fetch time is on the page row. */
const fetchedPage = (reviewList: Record<string, unknown>[]) => ({ ...reviewsPage(reviewList), fetched_at: FETCHED });

describe('normalize reviews', () => {
  it('one typed row per review, with fid from the unit and fetch time from the page row', async () => {
    const r = review({
      rating: '4/5',
      created: '3 weeks ago',
      date: '2025-02-22',
      review_reply: 'Thanks!',
      review_reply_created: 'a week ago',
      photos: ['https://p.test/1.jpg', 'https://p.test/2.jpg'],
    });
    const { rows } = await run(reviews(), [fetchedPage([r, review()])], params);
    expect(rows).toHaveLength(2);
    const row = rows[0]!;
    expect(row).toMatchObject({
      fid: FID,
      start: 10,
      review_id: r.review_id,
      reviewer_name: (r.reviewer as Record<string, unknown>).display_name,
      reviewer_link: (r.reviewer as Record<string, unknown>).link,
      reviewer_photo: (r.reviewer as Record<string, unknown>).profile_photo_url,
      link: r.link,
      source: 'Google',
      source_logo: 'https://logos.example.test/g.png',
      rating: 4,
      rating_scale: 5,
      rating_normalized: 4,
      created: '3 weeks ago',
      edited: false,
      comment: r.comment,
      review_reply: 'Thanks!',
      review_reply_created: 'a week ago',
      photos: ['https://p.test/1.jpg', 'https://p.test/2.jpg'],
      details_other: null,
    });
    // The review's own date, not "3 weeks ago" resolved against the fetch time.
    expect(row.created_at).toEqual(new Date('2025-02-22T00:00:00.000Z'));
    expect(row.review_reply_created_at).toEqual(new Date('2025-03-08T12:00:00.000Z'));
    expect(row.date).toBeInstanceOf(DateOnly);
    expect((row.date as DateOnly).iso).toBe('2025-02-22');
    expect(row.fetched_at).toEqual(new Date(FETCHED));
    // Every row has the same columns, present or not in the payload.
    expect(Object.keys(rows[1]!)).toEqual(Object.keys(row));
    expect(rows[1]).toMatchObject({ date: null, review_reply: null, review_reply_created_at: null, photos: null });
  });

  it('every spec detail id becomes a typed column; unknown ids and bad aspect values are kept', async () => {
    const r = review({
      details: [
        detail('HOTELS_ASPECT_ROOMS', '5'),
        detail('HOTELS_ASPECT_SERVICES', 4),
        detail('HOTELS_ASPECT_LOCATION', '9'),
        detail('HOTELS_PILOT_TRIP_TYPE', 'Vacation'),
        detail('HOTELS_PILOT_TRAVEL_GROUP_TYPE', 'Family'),
        detail('HOTELS_VIBE', 'Quiet'),
        detail('HOTELS_VIBE', 'Romantic'),
        detail('HOTELS_TIPS_TOPICS_ROOMS', 'Ask for a high floor'),
        detail('HOTELS_TIPS_TOPICS_NEARBY_ACTIVITIES', 'Parks nearby'),
        detail('HOTELS_TIPS_TOPICS_SAFETY', 'Felt safe'),
        detail('HOTELS_TIPS_TOPICS_WALKABILITY', 'Very walkable'),
        detail('TTD_WAIT_TIME', 'No wait'),
      ],
    });
    const { rows } = await run(reviews(), [reviewsPage([r])], params);
    expect(rows[0]).toMatchObject({
      aspect_rooms: 5,
      aspect_services: 4,
      aspect_location: null,
      trip_type: 'Vacation',
      travel_group: 'Family',
      hotel_vibe: 'Quiet, Romantic',
      tips_rooms: 'Ask for a high floor',
      tips_nearby_activities: 'Parks nearby',
      tips_safety: 'Felt safe',
      tips_walkability: 'Very walkable',
    });
    expect(rows[0]!.details_other).toEqual([
      {
        id: 'HOTELS_ASPECT_LOCATION',
        name: 'Name of HOTELS_ASPECT_LOCATION',
        value: '9',
        description: 'Question about HOTELS_ASPECT_LOCATION',
      },
      {
        id: 'TTD_WAIT_TIME',
        name: 'Name of TTD_WAIT_TIME',
        value: 'No wait',
        description: 'Question about TTD_WAIT_TIME',
      },
    ]);
    for (const col of [...Object.values(REVIEW_ASPECT_COLUMNS), ...Object.values(REVIEW_TEXT_DETAIL_COLUMNS)])
      expect(rows[0]).toHaveProperty(col);
  });

  it('Edited, unparseable and missing created texts', async () => {
    const page = fetchedPage([
      review({ created: 'Edited 2 months ago' }),
      review({ created: 'vor 3 Wochen' }),
      review({ created: undefined }),
      review({ created: 'yesterday' }),
    ]);
    const { rows, deadLetters } = await run(reviews(), [page], params);
    expect(deadLetters).toEqual([]);
    expect(rows[0]).toMatchObject({ created: 'Edited 2 months ago', edited: true });
    expect(rows[0]!.created_at).toEqual(new Date('2025-01-15T12:00:00.000Z'));
    expect(rows[1]).toMatchObject({ created: 'vor 3 Wochen', created_at: null, edited: false });
    expect(rows[2]).toMatchObject({ created: null, created_at: null });
    expect(rows[3]!.created_at).toEqual(new Date('2025-03-14T12:00:00.000Z'));
  });

  it('ratings on other scales, fractional and malformed', async () => {
    const page = reviewsPage([
      review({ rating: '4.5/5' }),
      review({ rating: '10/10', source: 'Hotel site' }),
      review({ rating: 'five stars' }),
      review({ rating: '7/5' }),
    ]);
    const { rows } = await run(reviews(), [page], params);
    expect(rows.map((r) => [r.rating, r.rating_scale, r.rating_normalized])).toEqual([
      [4.5, 5, 4.5],
      [10, 10, 5],
      [null, null, null],
      [null, null, null],
    ]);
    expect(parseRating(3)).toEqual({ rating: 3, scale: 5, normalized: 3 });
  });

  it('a bad date is null; a review row without a page wrapper is accepted; no fetch time falls back to now', async () => {
    const before = Date.now();
    const { rows } = await run(reviews(), [review({ date: '2025-02-30', created: 'just now' })], {
      unitParams: { fid: FID },
    });
    expect(rows[0]!.date).toBeNull();
    expect(rows[0]!.fetched_at).toBeNull();
    const at = (rows[0]!.created_at as Date).getTime();
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });

  it('created_at comes from the review\'s own date: two "2 weeks ago" reviews of different days differ', async () => {
    const page = fetchedPage([
      review({ created: '2 weeks ago', date: '2025-02-22' }),
      review({ created: '2 weeks ago', date: '2025-02-08' }),
    ]);
    const { rows } = await run(reviews(), [page], params);
    expect(rows.map((r) => (r.created_at as Date).toISOString())).toEqual([
      '2025-02-22T00:00:00.000Z',
      '2025-02-08T00:00:00.000Z',
    ]);
    expect(rows.map((r) => (r.date as DateOnly).iso)).toEqual(['2025-02-22', '2025-02-08']);
  });

  it("relative text resolves against the page's fetched_at, however much later the page is normalized", async () => {
    const landed = {
      reviews: [review({ created: 'a week ago', date: undefined })],
      fetched_at: '2024-01-10T00:00:00Z',
    };
    const { rows } = await run(reviews(), [landed], params);
    expect(rows[0]!.created_at).toEqual(new Date('2024-01-03T00:00:00.000Z'));
    // The page keeps its fetch time, so normalizing it again (tonight, or in a year) gives the same instant.
    expect(rows[0]!.fetched_at).toEqual(new Date('2024-01-10T00:00:00.000Z'));
    const again = await run(reviews(), [structuredClone(landed)], params);
    expect(again.rows[0]!.created_at).toEqual(rows[0]!.created_at);
  });
});
