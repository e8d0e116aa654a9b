/**
 * Cursor values, parsed strictly and once. An incremental cursor is of one kind, fixed by its initial value: an
 * integer (ids, sequence numbers), a time (ISO 8601: a date, or a time with its UTC offset), or text. Every value
 * that becomes a cursor or a bound of one — the configured initial value, `sluice state set --cursor`, a backfill's
 * `--from`/`--to`, the values the records carry, the checkpoints committed earlier — is read here into one canonical
 * form before it is stored, compared or sent in a paid filter:
 *
 * - a time is the UTC instant as `YYYY-MM-DDTHH:MM:SS.sssZ` (the form the service's records carry), its digits past
 *   the millisecond kept when there are any; a date is its midnight, UTC. A value must be on the calendar (no
 *   February 30th, which `Date.parse` takes for March 2nd) and a time must say its offset (`Z` or `±hh:mm`): a time
 *   without one is a different instant on every machine, and `PST` is no offset ISO 8601 knows.
 * - an integer is a JSON number within ±(2^53 − 1). Beyond that a number is not exact in JSON.parse, the state files
 *   or the filter (9007199254740993 reads as …992): sluice refuses it rather than carry it exactly as text, because
 *   a record's value has already been rounded by the decoders' JSON.parse before sluice sees it, so an exact
 *   cursor past 2^53 could not be kept end to end anyway. Digits in a string (a CSV cell) count as the integer.
 * - text is any non-empty string, compared as such.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';

export type CursorValue = string | number;
export type CursorKind = 'integer' | 'time' | 'text';

/** A value read as a cursor: its canonical form, and the key values of its kind are ordered by. */
export interface CursorReading {
  value: CursorValue;
  key: number | string;
}

/** What a value that does not read says about itself. */
export interface CursorProblem {
  problem: string;
}

const DATE_SHAPE = /^\d{4}-\d{2}-\d{2}/;
const TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):(\d{2})))?$/;
const NO_OFFSET = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;
const INTEGER = /^[+-]?\d+$/;

/** The kind of a cursor whose initial value is `initial`: a number, a date's text, or other text. */
export function cursorKind(initial: CursorValue): CursorKind {
  if (typeof initial === 'number') return 'integer';
  return DATE_SHAPE.test(initial) ? 'time' : 'text';
}

const KIND_NAMES: Record<CursorKind, string> = {
  integer: 'integers',
  time: 'dates and times',
  text: 'text',
};

/** `v` as a value of a cursor of `kind`: its canonical form and key, or what is wrong with it. */
export function readCursorValue(v: unknown, kind: CursorKind): CursorReading | CursorProblem {
  if (kind === 'integer') return readInteger(v);
  if (typeof v !== 'string') return { problem: `${describe(v)}, not ${kind === 'time' ? 'a date or time' : 'text'}` };
  if (kind === 'time') return readTime(v);
  return v.trim() === '' ? { problem: 'empty' } : { value: v, key: v };
}

function readInteger(v: unknown): CursorReading | CursorProblem {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && INTEGER.test(v.trim())) n = Number(v.trim());
  else return { problem: `${describe(v)}, not a whole number` };
  if (!Number.isInteger(n)) return { problem: `${n} is not a whole number` };
  if (!Number.isSafeInteger(n))
    return {
      problem: `${typeof v === 'string' ? v.trim() : n} is beyond the integers a JSON number holds exactly (±${Number.MAX_SAFE_INTEGER})`,
    };
  // -0 is 0: one text for one value.
  return { value: n + 0, key: n + 0 };
}

function readTime(text: string): CursorReading | CursorProblem {
  const t = parseTime(text);
  return 'problem' in t ? t : { value: t.value, key: t.key };
}

function parseTime(text: string): (CursorReading & { ms: number }) | CursorProblem {
  const m = TIME.exec(text.trim());
  if (m === null) {
    if (NO_OFFSET.test(text.trim()))
      return { problem: 'a time without its UTC offset: add Z (UTC) or ±hh:mm, e.g. 2025-03-01T06:00:00Z' };
    return { problem: 'not an ISO 8601 date (YYYY-MM-DD) or time with its offset (YYYY-MM-DDTHH:MM:SSZ or ±hh:mm)' };
  }
  const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', , sign, oh = '0', om = '0'] = m;
  const [year, month, day] = [Number(y), Number(mo), Number(d)];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month))
    return { problem: `${y}-${mo}-${d} is not a day of the calendar` };
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return { problem: `${h}:${mi}:${s} is not a time of day` };
  if (Number(oh) > 23 || Number(om) > 59) return { problem: `${sign}${oh}:${om} is not a UTC offset` };
  // setUTCFullYear, not Date.UTC: that one reads the years 0–99 as 1900–1999.
  const at = new Date(0);
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(Number(h), Number(mi), Number(s), Number(fraction.slice(0, 3).padEnd(3, '0')));
  const ms = at.getTime() - (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  const utc = new Date(ms);
  if (utc.getUTCFullYear() < 0 || utc.getUTCFullYear() > 9999) return { problem: 'outside the years 0000–9999' };
  const iso = utc.toISOString();
  const finer = fraction.slice(3).replace(/0+$/, '');
  const value = finer === '' ? iso : `${iso.slice(0, -1)}${finer}Z`;
  return { value, key: `${iso.slice(0, -1)}${finer.padEnd(6, '0')}`, ms };
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null) return 'null';
  return Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

/** The canonical form of `v` in its own kind (a number as an integer, a date's text as a time), or undefined. */
export function canonicalCursorValue(v: unknown): CursorReading | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') return undefined;
  const r = readCursorValue(v, cursorKind(v));
  return 'problem' in r ? undefined : r;
}

/**
 * Cursor values in order: each read in its own kind (integers, times, text), two of one kind by it; values of
 * different kinds, or that do not read, as text.
 */
export function compareCursor(a: CursorValue, b: CursorValue): number {
  const ka = canonicalCursorValue(a)?.key;
  const kb = canonicalCursorValue(b)?.key;
  if (ka !== undefined && kb !== undefined && typeof ka === typeof kb) return compareKeys(ka, kb);
  return compareKeys(String(a), String(b));
}

/** Two keys of one kind (`CursorReading.key`) in order. */
export function compareKeys(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The instant of a time cursor's value in ms since the epoch, or undefined for a value that is not a time. */
export function timeMs(v: unknown): number | undefined {
  if (typeof v !== 'string' || !DATE_SHAPE.test(v)) return undefined;
  const t = parseTime(v);
  return 'problem' in t ? undefined : t.ms;
}

/** The warning for the values of `field` a unit did not take as its cursor because they are not of its kind. */
export function unreadableCursorWarning(
  unit: string,
  field: string,
  kind: CursorKind,
  unreadable: { count: number; first: unknown; problem: string },
): string {
  const records = unreadable.count === 1 ? '1 record has' : `${unreadable.count} records have`;
  return (
    `${unit}: ${records} a ${field} that is not a cursor value (the cursor holds ${KIND_NAMES[kind]}), e.g. ` +
    `${describe(unreadable.first)}: ${unreadable.problem}; loaded, but not taken as the cursor`
  );
}

/** The cursor a value typed by the user is for: its field and initial value, which sets its kind. */
export interface CursorOf {
  field: string;
  initial: CursorValue;
}

/**
 * A value typed on the command line (`option`: `--cursor`, `--from`, `--to`) for the cursor `of`, in canonical
 * form; a value of the wrong kind, off the calendar, without its offset or beyond the exact integers is refused
 * (exit 2) with what to give instead.
 */
export function typedCursorValue(text: string, of: CursorOf, option: string): CursorValue {
  const kind = cursorKind(of.initial);
  const r = readCursorValue(text, kind);
  if (!('problem' in r)) return r.value;
  throw new SluiceError(
    `${option} ${JSON.stringify(text)}: ${r.problem}, and the cursor ${of.field} holds ${KIND_NAMES[kind]} (its initial value is ${JSON.stringify(of.initial)})`,
    { hint: typedHint(kind, of, option), exitCode: EXIT_CODES.config },
  );
}

function typedHint(kind: CursorKind, of: CursorOf, option: string): string {
  if (kind === 'integer') return `give ${option} a whole number, e.g. ${option} ${of.initial}`;
  if (kind === 'time')
    return `give ${option} a date or a time with its offset, e.g. ${option} 2025-03-01 (midnight UTC) or ${option} 2025-03-01T06:00:00Z or ${option} 2025-03-01T08:00:00+02:00`;
  return `give ${option} a value of ${of.field}, e.g. ${JSON.stringify(of.initial)}`;
}
