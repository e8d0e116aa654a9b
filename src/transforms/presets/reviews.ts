/**
 * `reviews`: one row per review of a place.
 *
 * - `rating` is the number before the slash ("4/5" → 4, "4.5/5" → 4.5) and `rating_scale` the one after (5 on
 *   Google; other sources such as hotel sites use 10), `rating_normalized` the rating on a 5-point scale so
 *   sources can be compared.
 * - `created` is kept as the service wrote it; `created_at` is that relative text resolved against the page's
 *   fetch time (the page row's `fetched_at`, else the time of the transform), so it is approximate; `edited` says the
 *   text began with "Edited". Text we cannot read gives `created_at: null`, never an error.
 * - `date` (`YYYY-MM-DD`, when the service gives one) is a DateOnly.
 * - The spec's detail ids are typed columns, always present: the three hotel aspects as integers 1–5 (anything
 *   else null), the others as text (repeated ids joined with ", "). Details with other ids — and aspect values
 *   that are not an integer 1–5 — are kept in `details_other` (id, name, value as text, description).
 */
import type { Row, TransformContext } from '../../core/types.js';
import { DateOnly } from '../../core/values.js';
import { asObject, isPlainObject, toInteger, toText, toTextList } from '../coerce.js';
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
    created_at: created.at,
    edited: created.edited,
    date: DateOnly.parse(r.date),
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

/** "4/5", "4.5/5", "10/10"; a bare number is taken on Google's 5-point scale. */
export function parseRating(v: unknown): Rating {
  let rating: number | null = null;
  let scale: number | null = null;
  if (typeof v === 'number' && Number.isFinite(v)) [rating, scale] = [v, 5];
  else if (typeof v === 'string') {
    const m = /^\s*(\d+(?:[.,]\d+)?)\s*(?:\/\s*(\d+(?:\.\d+)?))?\s*$/.exec(v);
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
