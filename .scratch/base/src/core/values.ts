/**
 * How typed values travel inside rows, between transforms and sinks.
 *
 * Rows are plain objects, but two kinds of value are not JSON primitives:
 *
 * - **Timestamps are JS `Date` objects** (an instant; always valid — producers put `null` instead of an invalid
 *   date). Sinks map them to DuckDB/Parquet `TIMESTAMP` (UTC); JSONL writes them as ISO 8601 strings, which is what
 *   `Date.prototype.toJSON` already does.
 * - **Calendar dates are `DateOnly` objects** (no time, no zone: a review's `date`, a founding day). Sinks map them
 *   to `DATE`; JSONL writes `'YYYY-MM-DD'` through `toJSON()`. A class rather than a bare `'YYYY-MM-DD'` string so
 *   the type survives without a side channel of column hints: a string stays `TEXT`.
 *
 * Everything else is JSON-compatible: string, number (integers are numbers with no fraction), boolean, null,
 * arrays (LIST) and plain objects (STRUCT).
 */

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A calendar date (year, month, day) with no time of day and no time zone. */
export class DateOnly {
  /** `YYYY-MM-DD`, always a real calendar date. */
  readonly iso: string;

  /** Throws on anything but a valid `YYYY-MM-DD`; use `DateOnly.parse` for untrusted input. */
  constructor(iso: string) {
    if (!isCalendarDate(iso)) throw new RangeError(`not a calendar date (YYYY-MM-DD): ${JSON.stringify(iso)}`);
    this.iso = iso;
  }

  /** `YYYY-MM-DD` → DateOnly; anything else (including 2025-02-30) → null. */
  static parse(text: unknown): DateOnly | null {
    return typeof text === 'string' && isCalendarDate(text.trim()) ? new DateOnly(text.trim()) : null;
  }

  /** The UTC calendar day of an instant. */
  static fromDate(d: Date): DateOnly {
    return new DateOnly(d.toISOString().slice(0, 10));
  }

  /** Midnight UTC of this day, for comparisons with timestamps. */
  toDate(): Date {
    return new Date(`${this.iso}T00:00:00.000Z`);
  }

  toJSON(): string {
    return this.iso;
  }

  toString(): string {
    return this.iso;
  }
}

export function isDateOnly(v: unknown): v is DateOnly {
  return v instanceof DateOnly;
}

/** A `Date` that holds an actual instant (an invalid Date is never a timestamp value). */
export function isTimestamp(v: unknown): v is Date {
  return v instanceof Date && !Number.isNaN(v.getTime());
}

function isCalendarDate(s: string): boolean {
  const m = DATE_RE.exec(s);
  return m !== null && validDay(Number(m[1]), Number(m[2]), Number(m[3]));
}

function validDay(y: number, mo: number, d: number): boolean {
  if (mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = mo === 2 ? (leap ? 29 : 28) : mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31;
  return d <= days;
}

/** `YYYY-MM-DDTHH:MM:SS.sssZ` (what `toISOString` writes, and most services) without a regex. */
function canonicalUtc(s: string): Date | null {
  if (s[4] !== '-' || s[7] !== '-' || s[10] !== 'T' || s[13] !== ':' || s[16] !== ':' || s[19] !== '.' || s[23] !== 'Z')
    return null;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  const hh = digits(s, 11, 2);
  const mm = digits(s, 14, 2);
  const ss = digits(s, 17, 2);
  const ms = digits(s, 20, 3);
  if (y < 100 || mo < 0 || d < 0 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59 || ms < 0) return null;
  if (!validDay(y, mo, d)) return null;
  return new Date(Date.UTC(y, mo - 1, d, hh, mm, ss, ms));
}

/** The decimal number in `s[at, at+n)`, or -1 when a character is not a digit. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

const ISO_TS_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * An ISO 8601 date or date-time string → Date; anything else → null. Strict on purpose: `Date.parse` accepts
 * engine-specific forms and reads zone-less date-times as local time. Here a missing offset means UTC.
 */
export function parseIsoTimestamp(text: unknown): Date | null {
  if (typeof text !== 'string') return null;
  if (text.length === 24) {
    const fast = canonicalUtc(text);
    if (fast !== null) return fast;
  }
  const m = ISO_TS_RE.exec(text.length > 40 ? text.trim() : text);
  if (!m) return null;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  if (!validDay(y, mo, d)) return null;
  const hh = Number(m[4] ?? 0);
  const mm = Number(m[5] ?? 0);
  const ss = Number(m[6] ?? 0);
  if (hh > 23 || mm > 59 || ss > 59) return null;
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  // Arithmetic rather than `new Date(string)`: several times faster, and this runs for every timestamp of a load.
  let t = Date.UTC(y, mo - 1, d, hh, mm, ss, ms);
  const zone = m[8];
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMin = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || 0);
    t -= sign * offsetMin * 60_000;
  }
  // Date.UTC maps years 0–99 to 1900–1999; four-digit years below 100 are set explicitly.
  const date = new Date(t);
  if (y < 100) date.setUTCFullYear(date.getUTCFullYear() - 1900);
  return Number.isNaN(date.getTime()) ? null : date;
}
