/**
 * Deterministic review pages for (seed, fid, start).
 *
 * Each fid has a finite review count (0–57, different per fid; some exactly a multiple of the page size). Like
 * the real service the response is `{reviews: […]}` with no pagination block and no end marker, and the page size
 * varies ("usually 10"): the first page holds 10, a later one now and then 8 or 9 (`reviewPageSize`, from the
 * seed, the fid and the page's `start`), the last one what is left, and a `start` at or past the end gives
 * `{reviews: []}`. So a crawler moves on by the number of reviews it got and can only stop at an empty page; a
 * full crawl collects exactly `expectedReviewIds(seed, fid)`, each once.
 *
 * The fid decides the kind of place: hotels carry the spec's `HOTELS_*` details (every fifth review has all ten
 * ids, so each id appears whenever a hotel has reviews), attractions carry `TTD_*` details the spec does not name
 * (normalizers must keep unknown ids), other places none.
 *
 * Under a pinned clock (`grows`) places also gain reviews as the emulated calendar passes GROWTH_FROM: one every
 * 1–4 days per place (from the seed), each at a whole hour, shown first (newest first). The original reviews' dates
 * are then counted back from GROWTH_FROM rather than from `now`, so a review keeps its date night after night.
 */
import { GROWTH_FROM } from '../datasets/growth.js';
import { serpRng, type SerpRng } from './serp-rng.js';

export const REVIEWS_PAGE_SIZE = 10;

/** The vendor deprecated `start` for maps pages on this day (docs/service.md §5.2); review pages are maps data. */
export const REVIEW_START_DEPRECATED = Date.UTC(2025, 11, 15);

/**
 * Whether a review page asked for at `start` is answered as that page or as the place's first page again. Reviews
 * carry no pagination block and no documented paging parameter; the upstream answer pages by a continuation token the
 * parsed JSON drops (the real samples' raw HTML carries one), and `start` was deprecated for maps on
 * REVIEW_START_DEPRECATED. So `dated` honours `start` before that day and repeats the first page from it on.
 */
export function reviewStartHonoured(mode: 'dated' | 'start' | 'repeat', now: number): boolean {
  if (mode === 'start') return true;
  if (mode === 'repeat') return false;
  return now < REVIEW_START_DEPRECATED;
}

export type PlaceKind = 'hotel' | 'attraction' | 'other';

type Obj = Record<string, unknown>;

export function placeKind(seed: number, fid: string): PlaceKind {
  const u = serpRng(seed, 'place-kind', fid.toLowerCase()).next();
  return u < 0.5 ? 'hotel' : u < 0.75 ? 'attraction' : 'other';
}

export function reviewTotal(seed: number, fid: string): number {
  const r = serpRng(seed, 'review-total', fid.toLowerCase());
  const u = r.next();
  if (u < 0.08) return 0;
  if (u < 0.25) return REVIEWS_PAGE_SIZE * r.int(1, 5);
  return r.int(1, 57);
}

/** Every review id a full crawl of the fid collects, in order (all distinct). */
export function expectedReviewIds(seed: number, fid: string): string[] {
  return Array.from({ length: reviewTotal(seed, fid) }, (_, i) => reviewId(seed, fid, i));
}

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Emulated ms at which the place's k-th new review (k from 0, oldest first) is posted. */
export function newReviewAt(seed: number, fid: string, k: number): number {
  const r = serpRng(seed, 'review-rate', fid.toLowerCase());
  const everyDays = r.int(1, 4);
  const hour = serpRng(seed, 'review-hour', fid.toLowerCase(), k).int(1, everyDays * 24 - 1);
  return GROWTH_FROM + k * everyDays * DAY + hour * HOUR;
}

/** New reviews the place has at emulated time `at` (0 unless the clock is pinned). */
export function newReviewCount(seed: number, fid: string, at: number): number {
  if (at < GROWTH_FROM) return 0;
  const everyDays = serpRng(seed, 'review-rate', fid.toLowerCase()).int(1, 4);
  const full = Math.floor((at - GROWTH_FROM) / (everyDays * DAY));
  return full + (newReviewAt(seed, fid, full) <= at ? 1 : 0);
}

/** Every review id the place shows at `at` under a pinned clock, newest first. */
export function reviewIdsAt(seed: number, fid: string, at: number): string[] {
  const n = newReviewCount(seed, fid, at);
  return [...Array.from({ length: n }, (_, p) => newReviewId(seed, fid, n - 1 - p)), ...expectedReviewIds(seed, fid)];
}

/**
 * Reviews the page asked for at `start` holds when the place has enough: 10 on the first page; on a later one 10,
 * or now and then (one page in five) 9 or 8.
 */
export function reviewPageSize(seed: number, fid: string, start: number): number {
  if (start <= 0) return REVIEWS_PAGE_SIZE;
  const r = serpRng(seed, 'review-page-size', fid.toLowerCase(), start);
  return r.bool(0.2) ? REVIEWS_PAGE_SIZE - r.int(1, 2) : REVIEWS_PAGE_SIZE;
}

/**
 * The `start` of every page a crawl requests of a place showing `total` reviews, moving on by the reviews each page
 * held, up to and including the empty page at the end.
 */
export function reviewPageStarts(seed: number, fid: string, total: number): number[] {
  const starts = [0];
  for (let s = 0; s < total;) starts.push((s += Math.min(reviewPageSize(seed, fid, s), total - s)));
  return starts;
}

/** How many reviews each page of a place showing `total` reviews holds, in page order (the empty page left out). */
export function reviewPageSizes(seed: number, fid: string, total: number): number[] {
  const starts = reviewPageStarts(seed, fid, total);
  return starts.slice(1).map((s, i) => s - starts[i]!);
}

/**
 * Whether a place's pages (of `reviewPageSizes`) hold a page shorter than 10 before the last — the shape a crawl
 * must not take for the end — or all hold 10 but the last.
 */
export function hasShortPageBeforeLast(seed: number, fid: string, total: number): boolean {
  return reviewPageSizes(seed, fid, total)
    .slice(0, -1)
    .some((n) => n < REVIEWS_PAGE_SIZE);
}

/**
 * Pages a crawl requests of a place showing `total` reviews, newest first, when the first `fresh` of them are new to
 * it: up to the first page showing a review it loaded before, or, when all are new, up to the empty page.
 */
export function reviewPagesUntilKnown(seed: number, fid: string, total: number, fresh: number): number {
  const starts = reviewPageStarts(seed, fid, total);
  const i = starts.findIndex((s, k) => k === starts.length - 1 || starts[k + 1]! > fresh);
  return i + 1;
}

export function reviewsPage(seed: number, fid: string, start: number, now: Date, grows = false): { reviews: Obj[] } {
  const fresh = grows ? newReviewCount(seed, fid, now.getTime()) : 0;
  const total = fresh + reviewTotal(seed, fid);
  const first = Math.max(0, Math.floor(start));
  const anchor = grows ? GROWTH_FROM : now.getTime();
  const reviews: Obj[] = [];
  for (let p = first; p < Math.min(first + reviewPageSize(seed, fid, first), total); p++)
    reviews.push(p < fresh ? newReview(seed, fid, fresh - 1 - p, now) : review(seed, fid, p - fresh, now, anchor));
  return { reviews };
}

function reviewId(seed: number, fid: string, i: number): string {
  const r = serpRng(seed, 'review-id', fid.toLowerCase());
  // The index inside the id keeps ids distinct; the rest only makes them look like the service's.
  return `Ch${Buffer.from(`CIHM0ogKE${r.hex(10)}${i.toString(36)}`).toString('base64url')}`;
}

const FIRST = ['Ana', 'Ben', 'Chloe', 'Dev', 'Elif', 'Farah', 'Gus', 'Hana', 'Ivan', 'Jia', 'Kofi', 'Lena', 'Mateo'];
const LAST = ['Moreau', 'Okafor', 'Lindqvist', 'Tanaka', 'Silva', 'Novak', 'Haddad', 'Kim', 'Rossi', 'Walsh'];
const SOURCES: [string, string, number][] = [
  ['Google', 'https://www.gstatic.com/images/branding/product/1x/googleg_48dp.png', 0.8],
  ['Tripadvisor', 'https://static.tacdn.com/img2/brand_refresh/Tripadvisor_logomark.svg', 0.12],
  ['Booking.com', 'https://cf.bstatic.com/static/img/favicon/booking-logo.svg', 0.08],
];
const OPENERS = ['Lovely place.', 'Not what we expected.', 'Would come back.', 'Decent overall.', 'Fantastic!'];
const BODIES = [
  'The staff were friendly and quick to help.',
  'It was crowded at the weekend, so go early.',
  'Prices are a bit high for what you get.',
  'Clean, quiet and easy to reach by metro.',
  'The view alone is worth the visit.',
  'Service was slow but the food made up for it.',
  'We booked ahead and skipped the queue.',
];
const REPLIES = [
  'Thank you for your kind words, we hope to welcome you again soon.',
  'We are sorry to hear about your experience and have shared it with our team.',
  'Thanks for visiting and for taking the time to write a review!',
];

/** Age of a review in days → the service's relative text. */
function relative(days: number): string {
  if (days < 1) return 'a day ago';
  if (days < 7) return days === 1 ? 'a day ago' : `${days} days ago`;
  if (days < 30) return Math.floor(days / 7) === 1 ? 'a week ago' : `${Math.floor(days / 7)} weeks ago`;
  if (days < 365) return Math.floor(days / 30) === 1 ? 'a month ago' : `${Math.floor(days / 30)} months ago`;
  return Math.floor(days / 365) === 1 ? 'a year ago' : `${Math.floor(days / 365)} years ago`;
}

function newReviewId(seed: number, fid: string, k: number): string {
  const r = serpRng(seed, 'review-id', fid.toLowerCase());
  return `Ch${Buffer.from(`CIHM0ogKN${r.hex(10)}${k.toString(36)}`).toString('base64url')}`;
}

/** The place's k-th new review (pinned clock). */
function newReview(seed: number, fid: string, k: number, now: Date): Obj {
  const posted = newReviewAt(seed, fid, k);
  const days = Math.max(0, Math.floor((now.getTime() - posted) / DAY));
  return buildReview(
    serpRng(seed, 'review-new', fid.toLowerCase(), k),
    seed,
    fid,
    newReviewId(seed, fid, k),
    k,
    () => ({
      days,
      dateMs: posted,
    }),
  );
}

/** Original review i, its date `anchor` minus its age (`anchor` is now, or GROWTH_FROM under a pinned clock). */
function review(seed: number, fid: string, i: number, now: Date, anchor = now.getTime()): Obj {
  const r = serpRng(seed, 'review', fid.toLowerCase(), i);
  const since = Math.max(0, Math.floor((now.getTime() - anchor) / DAY));
  return buildReview(r, seed, fid, reviewId(seed, fid, i), i, () => {
    // Newer reviews first, as the default sort shows them.
    const age = Math.floor(i * 9 + r.int(0, 8));
    return { days: age + since, dateMs: anchor - age * DAY };
  });
}

/** `age` is called at its fixed place among the draws, so every review keeps its values whatever the clock. */
function buildReview(
  r: SerpRng,
  seed: number,
  fid: string,
  id: string,
  i: number,
  age: () => { days: number; dateMs: number },
): Obj {
  const contributor = `1${String(r.int(0, 99_999_999)).padStart(8, '0')}${String(r.int(0, 999_999_999_999)).padStart(12, '0')}`;
  const [source, logo] = pickSource(r);
  const rating = r.pick([1, 2, 3, 4, 4, 5, 5, 5]);
  const { days, dateMs } = age();
  const edited = r.bool(0.12);
  const out: Obj = {
    review_id: id,
    reviewer: {
      profile_photo_url: `https://lh3.googleusercontent.com/a/ACg8oc${Buffer.from(r.hex(24)).toString('base64url').slice(0, 32)}=s120-c-rp-mo-br100`,
      display_name: `${r.pick(FIRST)} ${r.pick(LAST)}`,
      link: `https://www.google.com/maps/contrib/${contributor}?hl=en`,
    },
    link: `https://www.google.com/maps/reviews/data=!4m8!14m7!1m6!2m5!1s${id}!2m1!1s${fid.split(':')[1] ?? fid}`,
    source,
    source_logo: logo,
    rating: `${rating}/5`,
    created: `${edited ? 'Edited ' : ''}${relative(days)}`,
  };
  if (r.bool(0.7)) out.date = new Date(dateMs).toISOString().slice(0, 10);
  out.comment = `${r.pick(OPENERS)} ${r.pick(BODIES)} ${r.pick(BODIES)}`;
  if (r.bool(0.4)) {
    out.review_reply = r.pick(REPLIES);
    out.review_reply_created = relative(Math.max(0, days - r.int(0, 6)));
  }
  if (r.bool(0.25))
    out.photos = Array.from(
      { length: r.int(1, 4) },
      () => `https://lh3.googleusercontent.com/geougc-cs/${Buffer.from(r.hex(30)).toString('base64url')}`,
    );
  const details = reviewDetails(r, placeKind(seed, fid), i);
  if (details) out.details = details;
  return out;
}

function pickSource(r: SerpRng): [string, string] {
  let u = r.next();
  for (const [name, logo, w] of SOURCES) {
    if (u < w) return [name, logo];
    u -= w;
  }
  return [SOURCES[0]![0], SOURCES[0]![1]];
}

const HOTEL_TEXT_DETAILS: [string, string, string, string[]][] = [
  ['HOTELS_PILOT_TRIP_TYPE', 'Trip type', 'What kind of trip was it?', ['Vacation', 'Business', 'Weekend getaway']],
  [
    'HOTELS_PILOT_TRAVEL_GROUP_TYPE',
    'Travel group',
    'Who did you travel with?',
    ['Family', 'Couple', 'Solo', 'Friends'],
  ],
  ['HOTELS_VIBE', 'Hotel vibe', 'How would you describe the hotel?', ['Quiet', 'Luxury', 'Romantic', 'Great view']],
  [
    'HOTELS_TIPS_TOPICS_ROOMS',
    'Room tips',
    'Any tips about the rooms?',
    ['Ask for a high floor', 'Rooms facing the courtyard are quieter'],
  ],
  [
    'HOTELS_TIPS_TOPICS_NEARBY_ACTIVITIES',
    'Nearby activities',
    'What is there to do nearby?',
    ['The old town is a short walk away', 'Good running paths along the river'],
  ],
  ['HOTELS_TIPS_TOPICS_SAFETY', 'Safety', 'How safe is the area?', ['Felt safe at night', 'Busy but safe']],
  ['HOTELS_TIPS_TOPICS_WALKABILITY', 'Walkability', 'How walkable is the area?', ['Very walkable', 'You need a car']],
];
const HOTEL_ASPECTS: [string, string][] = [
  ['HOTELS_ASPECT_ROOMS', 'Rooms'],
  ['HOTELS_ASPECT_SERVICES', 'Service'],
  ['HOTELS_ASPECT_LOCATION', 'Location'],
];
const TTD_DETAILS: [string, string, string, string[]][] = [
  ['TTD_DAY_OF_VISIT', 'Visited on', 'When did you visit?', ['Weekday', 'Weekend', 'Public holiday']],
  ['TTD_WAIT_TIME', 'Wait time', 'How long did you wait to enter?', ['No wait', 'Up to 10 min', '30–60 min']],
  ['TTD_ADVANCE_RESERVATIONS', 'Reservation recommended', 'Do you recommend buying tickets in advance?', ['Yes', 'No']],
];

function reviewDetails(r: SerpRng, kind: PlaceKind, i: number): Obj[] | undefined {
  if (kind === 'other') return undefined;
  const full = i % 5 === 0;
  if (!full && !r.bool(0.5)) return undefined;
  const out: Obj[] = [];
  const textDetails = kind === 'hotel' ? HOTEL_TEXT_DETAILS : TTD_DETAILS;
  for (const [id, name, description, values] of textDetails)
    if (full || r.bool(0.5)) out.push({ id, name, value: r.pick(values), description });
  if (kind === 'hotel') {
    for (const [id, name] of HOTEL_ASPECTS) out.push({ id, name, value: r.int(1, 5), description: name });
    // An id outside the spec's list now and then, as the service adds new ones.
    if (r.bool(0.1))
      out.push({ id: 'TTD_WAIT_TIME', name: 'Wait time', value: 'No wait', description: 'How long did you wait?' });
  }
  return out;
}
