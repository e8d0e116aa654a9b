/**
 * Review pages say when a review was written only as relative English text ("a month ago", "Edited 2 years ago").
 * Resolved against the fetch time with calendar arithmetic in UTC, the result is approximate by nature: "a month
 * ago" is anything from 30 to 59 days before the fetch.
 */

export interface RelativeTime {
  /** The resolved instant, or null when the text is not a form we know. */
  at: Date | null;
  /** The text began with "Edited". */
  edited: boolean;
}

const UNIT_ALIASES: Record<string, Unit> = {
  second: 'second',
  sec: 'second',
  minute: 'minute',
  min: 'minute',
  hour: 'hour',
  hr: 'hour',
  day: 'day',
  week: 'week',
  month: 'month',
  year: 'year',
};
type Unit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

const MS: Record<'second' | 'minute' | 'hour' | 'day' | 'week', number> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
};

const AGO_RE = /^(a|an|one|\d+)\s+([a-z]+?)s?\s+ago$/;

export function parseRelativeTime(text: unknown, now: Date): RelativeTime {
  if (typeof text !== 'string') return { at: null, edited: false };
  let s = text.trim().toLowerCase().replace(/\s+/g, ' ');
  const edited = s.startsWith('edited');
  if (edited) s = s.slice('edited'.length).replace(/^[\s:,-]+/, '');
  // Some surfaces append where the review was posted ("a week ago on Google").
  s = s.replace(/ on [a-z0-9 .]+$/, '');
  return { at: resolve(s, now), edited };
}

function resolve(s: string, now: Date): Date | null {
  if (s === 'just now' || s === 'now' || s === 'a moment ago' || s === 'moments ago') return new Date(now);
  if (s === 'today') return new Date(now);
  if (s === 'yesterday') return shift(now, 'day', 1);
  if (s === 'last week') return shift(now, 'week', 1);
  if (s === 'last month') return shift(now, 'month', 1);
  if (s === 'last year') return shift(now, 'year', 1);
  const m = AGO_RE.exec(s);
  if (!m) return null;
  const n = m[1] === 'a' || m[1] === 'an' || m[1] === 'one' ? 1 : Number(m[1]);
  const unit = UNIT_ALIASES[m[2] ?? ''];
  if (!unit || !Number.isSafeInteger(n)) return null;
  return shift(now, unit, n);
}

function shift(now: Date, unit: Unit, n: number): Date {
  if (unit === 'month' || unit === 'year') {
    const d = new Date(now);
    const day = d.getUTCDate();
    // Set day 1 first so that "a month ago" from 31 March lands in February, not in early March.
    d.setUTCDate(1);
    if (unit === 'month') d.setUTCMonth(d.getUTCMonth() - n);
    else d.setUTCFullYear(d.getUTCFullYear() - n);
    const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
    d.setUTCDate(Math.min(day, last));
    return d;
  }
  return new Date(now.getTime() - n * MS[unit]);
}
