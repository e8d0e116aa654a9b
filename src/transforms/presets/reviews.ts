/**
 * `reviews`: one row per review of a place.
 *
 * - `rating` is the number before the slash ("4/5" → 4, "4.5/5" → 4.5) and `rating_scale` the one after (5 on
 *   Google; other sources such as hotel sites use 10), `rating_normalized` the rating on a 5-point scale so
 *   sources can be compared.
 * - `created` is kept as the service wrote it. `created_at` is the review's own `date` (`YYYY-MM-DD`, at midnight
 *   UTC) when the service gives one; otherwise that relative text resolved against the page's fetch time (the page
 *   row's `fetched_at`), so it is approximate. Only a row without `fetched_at` falls back to the time of the
 *   transform — a landed page normalized again months later resolves "a week ago" exactly as it did the first
 *   time. `edited` says the text began with "Edited". Text we cannot read gives `created_at: null`, never an error.
 * - `date` (when the service gives one) is a DateOnly; `fetched_at` is kept.
 * - The spec's detail ids are typed columns, always present: the three hotel aspects as integers 1–5 (anything
 *   else null), the others as text (repeated ids joined with ", "). Details with other ids — and aspect values
 *   that are not an integer 1–5 — are kept in `details_other` (id, name, value as text, description).
 */
import type { Row, TransformContext } from '../../core/types.js';
import { DateOnly } from '../../core/values.js';
import { asObject, isPlainObject, toInteger, toText, toTextList } from '../coerce.js';
import { column, struct, type DeclaredSchema } from '../../core/declared.js';
import { BIGINT, BOOLEAN, DATE, DOUBLE, TIMESTAMP, VARCHAR, listOf } from '../../core/logical-type.js';
import type { PresetOptions } from './preset.js';
import { rowFetchedAt } from './preset.js';
import { parseRelativeTime } from './relative-time.js';

/** Detail ids whose value is an integer rating 1–5 → column. */
export const REVIEW_ASPECT_COLUMNS: Readonly<Record<string, string>> = {
  HOTELS_ASPECT_ROOMS: 'aspect_rooms',
  HOTELS_ASPECT_SERVICES: 'aspect_services',
  HOTELS_ASPECT_LOCATION: 'aspect_location',
};

/** Detail ids whose value is text → column. */
export const REVIEW_TEXT_DETAIL_COLUMNS: Readonly<Record<string, string>> = {
  HOTELS_PILOT_TRIP_TYPE: 'trip_type',
  HOTELS_PILOT_TRAVEL_GROUP_TYPE: 'travel_group',
  HOTELS_VIBE: 'hotel_vibe',
  HOTELS_TIPS_TOPICS_ROOMS: 'tips_rooms',
  HOTELS_TIPS_TOPICS_NEARBY_ACTIVITIES: 'tips_nearby_activities',
  HOTELS_TIPS_TOPICS_SAFETY: 'tips_safety',
  HOTELS_TIPS_TOPICS_WALKABILITY: 'tips_walkability',
};

const ASPECT_DESCRIPTIONS: Readonly<Record<string, string>> = {
  aspect_rooms: 'Rooms rated 1–5 (`HOTELS_ASPECT_ROOMS`).',
  aspect_services: 'Service rated 1–5 (`HOTELS_ASPECT_SERVICES`).',
  aspect_location: 'Location rated 1–5 (`HOTELS_ASPECT_LOCATION`).',
};

const TEXT_DETAIL_DESCRIPTIONS: Readonly<Record<string, string>> = {
  trip_type: 'Trip type (`HOTELS_PILOT_TRIP_TYPE`).',
  travel_group: 'Travel group (`HOTELS_PILOT_TRAVEL_GROUP_TYPE`).',
  hotel_vibe: 'Vibe of the hotel (`HOTELS_VIBE`).',
  tips_rooms: 'Tips about rooms (`HOTELS_TIPS_TOPICS_ROOMS`).',
  tips_nearby_activities: 'Tips about nearby activities (`HOTELS_TIPS_TOPICS_NEARBY_ACTIVITIES`).',
  tips_safety: 'Tips about safety (`HOTELS_TIPS_TOPICS_SAFETY`).',
  tips_walkability: 'Tips about walkability (`HOTELS_TIPS_TOPICS_WALKABILITY`).',
};

/** Every row has exactly these keys, in this order. */
export const REVIEWS_COLUMNS: DeclaredSchema = [
  column('fid', VARCHAR, "Feature id of the place (the unit's, else the page row's `fid`)."),
  column('start', BIGINT, 'Offset of the review page.'),
  column('review_id', VARCHAR, "The service's review id."),
  column('reviewer_name', VARCHAR, "Reviewer's display name."),
  column('reviewer_link', VARCHAR, "Reviewer's profile URL."),
  column('reviewer_photo', VARCHAR, "Reviewer's photo URL."),
  column('link', VARCHAR, 'URL of the review.'),
  column('source', VARCHAR, 'Site the review is from (Google, Tripadvisor, …).'),
  column('source_logo', VARCHAR, 'Logo URL of that site.'),
  column('rating', DOUBLE, 'The number before the slash: "4/5" → 4.'),
  column('rating_scale', BIGINT, 'The number after the slash (5 on Google, 10 on some hotel sites).'),
  column('rating_normalized', DOUBLE, 'The rating on a 5-point scale, rounded to 2 decimals.'),
  column('created', VARCHAR, 'When the review was written, as the service wrote it ("a month ago").'),
  column(
    'created_at',
    TIMESTAMP,
    "The review's `date` at midnight UTC, else `created` resolved against `fetched_at` (approximate).",
  ),
  column('edited', BOOLEAN, '`created` began with "Edited".', false),
  column('date', DATE, "The review's date, when the service gives one."),
  column('comment', VARCHAR, 'The review text.'),
  column('review_reply', VARCHAR, "The owner's reply."),
  column('review_reply_created', VARCHAR, 'When the reply was written, as the service wrote it.'),
  column('review_reply_created_at', TIMESTAMP, '`review_reply_created` resolved against `fetched_at` (approximate).'),
  column('photos', listOf(VARCHAR), 'Photo URLs.'),
  ...Object.values(REVIEW_ASPECT_COLUMNS).map((c) => column(c, BIGINT, ASPECT_DESCRIPTIONS[c] ?? c)),
  ...Object.values(REVIEW_TEXT_DETAIL_COLUMNS).map((c) => column(c, VARCHAR, TEXT_DETAIL_DESCRIPTIONS[c] ?? c)),
  column(
    'details_other',
    listOf(struct({ id: VARCHAR, name: VARCHAR, value: VARCHAR, description: VARCHAR })),
    'Details with other ids, and aspect values that are not an integer 1–5 (value as text).',
  ),
  column('fetched_at', TIMESTAMP, 'When the review page was fetched.'),
];

export function normalizeReviews(row: Row, ctx: TransformContext, _opts: PresetOptions): Row[] {
  const fetchedAt = rowFetchedAt(row);
  const reference = fetchedAt ?? new Date();
  const fid = toText(ctx.unitParams.fid) ?? toText(row.fid);
  const start = toInteger(ctx.unitParams.start);
  // A page payload holds `reviews`; a decoder that split the page at `reviews` hands us one review per row.
  const reviews = Array.isArray(row.reviews) ? row.reviews : 'review_id' in row ? [row] : [];
  const out: Row[] = [];
  for (const review of reviews) {
    if (isPlainObject(review)) out.push(normalizeReview(review, { fid, start, fetchedAt, reference }));
  }
  return out;
}

interface ReviewEnv {
  fid: string | null;
  start: number | null;
  fetchedAt: Date | null;
  reference: Date;
}

function normalizeReview(r: Record<string, unknown>, env: ReviewEnv): Row {
  const reviewer = asObject(r.reviewer);
  const rating = parseRating(r.rating);
  const created = parseRelativeTime(r.created, env.reference);
  const date = DateOnly.parse(r.date);
  const replyCreated = parseRelativeTime(r.review_reply_created, env.reference);
  return {
    fid: env.fid,
    start: env.start,
    review_id: toText(r.review_id),
    reviewer_name: toText(reviewer?.display_name),
    reviewer_link: toText(reviewer?.link),
    reviewer_photo: toText(reviewer?.profile_photo_url),
    link: toText(r.link),
    source: toText(r.source),
    source_logo: toText(r.source_logo),
    rating: rating.rating,
    rating_scale: rating.scale,
    rating_normalized: rating.normalized,
    created: toText(r.created),
    // The review's own day is exact; relative text is not ("2 weeks ago" covers a week of days).
    created_at: date?.toDate() ?? created.at,
    edited: created.edited,
    date,
    comment: toText(r.comment),
    review_reply: toText(r.review_reply),
    review_reply_created: toText(r.review_reply_created),
    review_reply_created_at: replyCreated.at,
    photos: toTextList(r.photos),
    ...details(r.details),
    fetched_at: env.fetchedAt,
  };
}

interface Rating {
  rating: number | null;
  scale: number | null;
  normalized: number | null;
}

const NO_RATING: Rating = { rating: null, scale: null, normalized: null };

/** "4/5", "4.5/5", "10/10" (the scale is a whole number); a bare number is taken on Google's 5-point scale. */
export function parseRating(v: unknown): Rating {
  let rating: number | null = null;
  let scale: number | null = null;
  if (typeof v === 'number' && Number.isFinite(v)) [rating, scale] = [v, 5];
  else if (typeof v === 'string') {
    const m = /^\s*(\d+(?:[.,]\d+)?)\s*(?:\/\s*(\d+))?\s*$/.exec(v);
    if (m) [rating, scale] = [Number(m[1]!.replace(',', '.')), m[2] === undefined ? 5 : Number(m[2])];
  }
  if (rating === null || scale === null || scale <= 0 || rating < 0 || rating > scale) return NO_RATING;
  return { rating, scale, normalized: Math.round((rating / scale) * 5 * 100) / 100 };
}

function details(v: unknown): Row {
  const cols: Row = {};
  for (const col of Object.values(REVIEW_ASPECT_COLUMNS)) cols[col] = null;
  for (const col of Object.values(REVIEW_TEXT_DETAIL_COLUMNS)) cols[col] = null;
  const other: Row[] = [];
  for (const d of Array.isArray(v) ? v : []) {
    if (!isPlainObject(d)) continue;
    const id = toText(d.id) ?? '';
    const aspect = REVIEW_ASPECT_COLUMNS[id];
    const textCol = REVIEW_TEXT_DETAIL_COLUMNS[id];
    if (aspect !== undefined) {
      const n = toInteger(d.value);
      if (n !== null && n >= 1 && n <= 5 && cols[aspect] === null) {
        cols[aspect] = n;
        continue;
      }
    } else if (textCol !== undefined) {
      const text = toText(d.value);
      if (text !== null) {
        const prev = cols[textCol];
        cols[textCol] = typeof prev === 'string' ? `${prev}, ${text}` : text;
        continue;
      }
    }
    other.push({ id: toText(d.id), name: toText(d.name), value: toText(d.value), description: toText(d.description) });
  }
  cols.details_other = other.length > 0 ? other : null;
  return cols;
}
