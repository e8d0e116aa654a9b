/**
 * Place review records (a map-reviews dataset): one record per review, flat, with the quirks of the real shape —
 * `photos_by_reviewer` is a numeric string while `reviews_by_reviewer` is a number, `review` and the owner's
 * response are null when absent, `photos` is null rather than empty. Reviews come in runs of
 * `REVIEWS_PER_PLACE` per place, so place fields repeat the way they do in a real snapshot.
 */
import type { DatasetFields } from './dataset-fields.js';
import { COUNTRIES, COUNTRY_WEIGHTS, FIRST_NAMES, LAST_NAMES, NAME_ADJECTIVES, STREETS } from './dataset-vocab.js';
import { cumulative, recordRng, type RecordRng } from './record-rng.js';

export const PLACE_REVIEWS_ID = 'gd_lx8rv2kq7pl3m9aw1';
export const REVIEWS_PER_PLACE = 20;

export const placeReviewFields: DatasetFields = {
  url: { type: 'url', description: 'Map page of the place', required: true },
  place_id: { type: 'text', description: 'Place id', required: true },
  place_name: { type: 'text', description: 'Place name' },
  country: { type: 'text', description: 'ISO 3166-1 alpha-2 country of the place' },
  address: { type: 'text', description: 'Street address' },
  category: { type: 'text', description: 'Kind of place' },
  review_id: { type: 'text', description: 'Review id', required: true },
  reviewer_name: { type: 'text', description: 'Display name of the reviewer' },
  reviews_by_reviewer: { type: 'number', description: 'Reviews the reviewer has written' },
  photos_by_reviewer: { type: 'text', description: 'Photos the reviewer has posted (numeric text)' },
  reviewer_url: { type: 'url', description: 'Reviewer profile' },
  local_guide: { type: 'boolean', description: 'Reviewer is a local guide' },
  review_rating: { type: 'number', description: 'Stars, 1 to 5' },
  review: { type: 'text', description: 'Review text; null for a rating without text' },
  review_date: { type: 'date', description: 'When the review was posted' },
  number_of_likes: { type: 'number', description: 'Likes of the review' },
  response_of_owner: { type: 'text', description: "Owner's reply; null when none" },
  response_date: { type: 'date', description: 'When the owner replied; null when no reply' },
  photos: { type: 'array', description: 'Photos attached to the review; null when none', items: 'url' },
  timestamp: { type: 'date', description: 'When the record was collected' },
  input: { type: 'object', description: 'The input the record was collected for', fields: { url: 'url' } },
};

const S_PLACE = 11;
const S_REVIEW = 12;

const CATEGORIES = ['Restaurant', 'Hotel', 'Museum', 'Coffee shop', 'Park', 'Bakery', 'Gym', 'Bookstore', 'Bar'];
const PLACE_NOUNS = ['Kitchen', 'House', 'Garden', 'Corner', 'Hall', 'Market', 'Café', 'Lodge', 'Gallery'];
const REVIEW_SENTENCES = [
  'The staff were friendly and quick to help.',
  'It gets crowded at the weekend, so go early.',
  'Prices are a bit high for what you get.',
  'Clean, quiet and easy to reach by metro.',
  'The view alone is worth the visit.',
  'Service was slow but the food made up for it.',
  'We booked ahead and skipped the queue.',
  'Would not come back, the room smelled of smoke.',
  'Great value, and the breakfast was excellent.',
  "Parking is a nightmare, but it's worth it.",
];
const REPLIES = [
  'Thank you for your kind words, we hope to welcome you again soon.',
  'We are sorry to hear about your experience and have shared it with our team.',
  'Thanks for visiting and for taking the time to write a review!',
];
const RATING_WEIGHTS = cumulative([8, 5, 10, 25, 52]);
const RATINGS = [1, 2, 3, 4, 5];
const DAY = 86_400_000;
const COLLECTED_AT = Date.UTC(2025, 1, 3);

interface Place {
  url: string;
  place_id: string;
  place_name: string;
  country: string;
  address: string;
  category: string;
}

function place(seed: number, p: number): Place {
  const r = recordRng(seed, S_PLACE, p);
  const country = r.weighted(COUNTRIES, COUNTRY_WEIGHTS);
  const [city, region] = r.pick(country.cities);
  const name = `${r.pick(NAME_ADJECTIVES)} ${r.pick(PLACE_NOUNS)}`;
  const lat = (r.next() * 120 - 60).toFixed(7);
  const lng = (r.next() * 340 - 170).toFixed(7);
  return {
    url: `https://maps.example.com/place/${encodeURIComponent(name).replaceAll('%20', '+')}/@${lat},${lng},17z`,
    place_id: `ChIJ${r.token(23)}`,
    place_name: name,
    country: country.code,
    address: `${r.int(1, 999)} ${r.pick(STREETS)}, ${city}, ${region} ${r.int(10000, 99999)}`,
    category: r.pick(CATEGORIES),
  };
}

/** One record: a pure function of (seed, index). */
export function placeReview(seed: number, index: number): Record<string, unknown> {
  const pl = place(seed, Math.floor(index / REVIEWS_PER_PLACE));
  const r = recordRng(seed, S_REVIEW, index);
  const rating = r.weighted(RATINGS, RATING_WEIGHTS);
  const posted = COLLECTED_AT - r.int(1, 1500) * DAY - r.int(0, DAY - 1);
  const replied = r.bool(0.3);
  const reviewer = `${r.pick(FIRST_NAMES)} ${r.pick(LAST_NAMES)}`;
  const contrib = `1${String(r.int(0, 999_999_999)).padStart(10, '0')}${String(r.int(0, 999_999_999)).padStart(10, '0')}`;
  return {
    url: pl.url,
    place_id: pl.place_id,
    place_name: pl.place_name,
    country: pl.country,
    address: pl.address,
    category: pl.category,
    // The index in the id keeps ids distinct across the dataset.
    review_id: `Ch${r.token(18)}${index.toString(36)}`,
    reviewer_name: reviewer,
    reviews_by_reviewer: r.logInt(0, 3),
    photos_by_reviewer: String(r.logInt(0, 3) - 1),
    reviewer_url: `https://maps.example.com/contrib/${contrib}/reviews`,
    local_guide: r.bool(0.35),
    review_rating: rating,
    review: r.bool(0.25) ? null : reviewText(r),
    review_date: new Date(posted).toISOString(),
    number_of_likes: r.bool(0.7) ? 0 : r.logInt(0, 2.5),
    response_of_owner: replied ? r.pick(REPLIES) : null,
    response_date: replied ? new Date(posted + r.int(1, 20) * DAY).toISOString() : null,
    photos: r.bool(0.2) ? Array.from({ length: r.int(1, 4) }, () => `https://img.example.com/p/${r.token(32)}`) : null,
    timestamp: new Date(COLLECTED_AT + r.int(0, DAY)).toISOString(),
    input: { url: pl.url },
  };
}

function reviewText(r: RecordRng): string {
  const n = r.int(1, 4);
  let out = r.pick(REVIEW_SENTENCES);
  for (let i = 1; i < n; i++) out += ` ${r.pick(REVIEW_SENTENCES)}`;
  return out;
}
