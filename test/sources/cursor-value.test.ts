/**
 * Cursor values parsed strictly and once (sources/cursor-value.ts): the kinds, the calendar, offsets, the exact
 * integers, the one canonical text of each value, their order, and the refusals a user reads.
 */
import { describe, expect, it } from 'vitest';
import { cursorToSet } from '../../src/sources/cursor-bound.js';
import {
  compareCursor,
  cursorKind,
  readCursorValue,
  timeMs,
  typedCursorValue,
} from '../../src/sources/cursor-value.js';
import { snapshotSchema } from '../../src/sources/snapshot-schema.js';
import { refusal } from './refusal.js';

const value = (v: unknown, kind: 'integer' | 'time' | 'text'): unknown => {
  const r = readCursorValue(v, kind);
  return 'problem' in r ? `problem: ${r.problem}` : r.value;
};

describe('a cursor value', () => {
  it('is of the kind its initial value sets: a number, a date’s text, other text', () => {
    expect(cursorKind(0)).toBe('integer');
    expect(cursorKind('2025-01-01')).toBe('time');
    expect(cursorKind('2025-02-30')).toBe('time');
    expect(cursorKind('a0001')).toBe('text');
  });

  it('as a time: a date or a time with its offset, on the calendar, as one UTC text', () => {
    expect(value('2025-03-01', 'time')).toBe('2025-03-01T00:00:00.000Z');
    expect(value('2025-03-02T06:00:00+02:00', 'time')).toBe('2025-03-02T04:00:00.000Z');
    expect(value('2025-03-02T06:00Z', 'time')).toBe('2025-03-02T06:00:00.000Z');
    expect(value('2025-03-02t06:00:00.5z', 'time')).toBe('2025-03-02T06:00:00.500Z');
    expect(value('2024-02-29T23:30:00-01:00', 'time')).toBe('2024-03-01T00:30:00.000Z');
    // Digits past the millisecond are kept (trailing zeros dropped): a Postgres timestamp is not rounded.
    expect(value('2025-01-01T00:00:00.123456+00:00', 'time')).toBe('2025-01-01T00:00:00.123456Z');
    expect(value('2025-01-01T00:00:00.123000Z', 'time')).toBe('2025-01-01T00:00:00.123Z');
    expect(value('0050-06-01', 'time')).toBe('0050-06-01T00:00:00.000Z');
  });

  it('as a time: refused off the calendar, without an offset, with a zone’s name, or out of range', () => {
    expect(value('2025-02-30', 'time')).toBe('problem: 2025-02-30 is not a day of the calendar');
    expect(value('2023-02-29', 'time')).toBe('problem: 2023-02-29 is not a day of the calendar');
    expect(value('2025-13-01', 'time')).toBe('problem: 2025-13-01 is not a day of the calendar');
    expect(value('2025-04-31T00:00:00Z', 'time')).toBe('problem: 2025-04-31 is not a day of the calendar');
    expect(value('2025-01-01T24:00:00Z', 'time')).toBe('problem: 24:00:00 is not a time of day');
    expect(value('2025-01-01T10:00:00+24:00', 'time')).toBe('problem: +24:00 is not a UTC offset');
    for (const t of ['2025-01-01T12:00', '2025-01-01T12:00:00', '2025-01-01 12:00:00'])
      expect(value(t, 'time'), t).toMatch(/^problem: a time without its UTC offset/);
    for (const t of ['2025-01-01 12:00 PST', '2025-01-01T12:00:00+0200', 'March 1, 2025', '1740787200', ''])
      expect(value(t, 'time'), t).toMatch(/^problem: not an ISO 8601 date \(YYYY-MM-DD\) or time with its offset/);
    expect(value('9999-12-31T23:00:00-02:00', 'time')).toBe('problem: outside the years 0000–9999');
    expect(value(1740787200, 'time')).toBe('problem: number 1740787200, not a date or time');
  });

  it('as an integer: a whole number a JSON number holds exactly, a number or its digits', () => {
    expect(value(42, 'integer')).toBe(42);
    expect(value(' -7 ', 'integer')).toBe(-7);
    expect(value('9007199254740991', 'integer')).toBe(9007199254740991);
    expect(value(-0, 'integer')).toBe(0);
    expect(Object.is(value(-0, 'integer'), 0)).toBe(true);
    expect(value('9007199254740993', 'integer')).toBe(
      'problem: 9007199254740993 is beyond the integers a JSON number holds exactly (±9007199254740991)',
    );
    expect(value(2 ** 53, 'integer')).toMatch(/^problem: 9007199254740992 is beyond/);
    expect(value(1.5, 'integer')).toBe('problem: 1.5 is not a whole number');
    for (const t of ['1.5', '1e3', '0x10', '', 'ten']) expect(value(t, 'integer'), t).toMatch(/not a whole number$/);
  });

  it('as text: any text but an empty one', () => {
    expect(value('k', 'text')).toBe('k');
    expect(value(' ', 'text')).toBe('problem: empty');
    expect(value(5, 'text')).toBe('problem: number 5, not text');
  });

  it('orders each kind by its value: instants, sub-milliseconds included; numbers; text', () => {
    expect(compareCursor('2025-02-10T05:00:00.000Z', '2025-02-10T06:00:00+02:00')).toBeGreaterThan(0);
    expect(compareCursor('2025-01-01T00:00:00.123Z', '2025-01-01T00:00:00.1234Z')).toBeLessThan(0);
    expect(compareCursor('2025-01-01', '2025-01-01T00:00:00.000Z')).toBe(0);
    expect(compareCursor(9, 10)).toBeLessThan(0);
    expect(compareCursor('b', 'a')).toBeGreaterThan(0);
    expect(timeMs('2025-01-01T01:00:00+01:00')).toBe(Date.parse('2025-01-01T00:00:00Z'));
    expect(timeMs('2025-02-30')).toBeUndefined();
    expect(timeMs(5)).toBeUndefined();
  });
});

describe('a value typed for a cursor', () => {
  const dated = { field: 'timestamp', initial: '2025-01-01T00:00:00.000Z' };

  it('is refused (exit 2) with what is wrong, what the cursor holds and what to give instead', () => {
    const off = refusal(() => typedCursorValue('2025-02-30', dated, '--from'));
    expect(off.message).toBe(
      '--from "2025-02-30": 2025-02-30 is not a day of the calendar, and the cursor timestamp holds dates and times (its initial value is "2025-01-01T00:00:00.000Z")',
    );
    expect(off.hint).toBe(
      'give --from a date or a time with its offset, e.g. --from 2025-03-01 (midnight UTC) or --from 2025-03-01T06:00:00Z or --from 2025-03-01T08:00:00+02:00',
    );
    expect(refusal(() => typedCursorValue('9007199254740993', { field: 'id', initial: 0 }, '--cursor')).hint).toBe(
      'give --cursor a whole number, e.g. --cursor 0',
    );
    expect(typedCursorValue('2025-03-01T08:00:00+02:00', dated, '--to')).toBe('2025-03-01T06:00:00.000Z');
  });

  it('for `state set`: also refused past now + max_ahead_s, as the runs would not take it', () => {
    const now = Date.parse('2025-03-01T00:00:00Z');
    const f = { ...dated, maxAheadS: 3600 };
    expect(cursorToSet('2025-03-01T00:30:00Z', f, now)).toBe('2025-03-01T00:30:00.000Z');
    expect(refusal(() => cursorToSet('2025-03-01T02:00:00+00:00', f, now)).message).toMatch(
      /later than now \+ 3600 s \(incremental\.max_ahead_s\)/,
    );
    expect(refusal(() => cursorToSet('2025-01-01 12:00 PST', f, now)).message).toMatch(
      /^--cursor "2025-01-01 12:00 PST"/,
    );
  });

  it('configured as `incremental.initial`: read in its kind and kept canonical, or refused where the file says it', () => {
    const config = (initial: unknown) =>
      snapshotSchema.safeParse({
        type: 'snapshot',
        dataset_id: 'gd_l1vikfnt1wgvvqz95w',
        records_limit: 100,
        incremental: { cursor: 'timestamp', initial },
      });
    const ok = config('2025-01-01');
    expect(ok.success && ok.data.incremental?.initial).toBe('2025-01-01T00:00:00.000Z');
    for (const [initial, problem] of [
      ['2025-02-30', '2025-02-30 is not a day of the calendar'],
      ['2025-01-01 12:00 PST', 'not an ISO 8601 date'],
      // What YAML makes of 9007199254740993: rounded to 2^53 before the schema sees it.
      [2 ** 53, 'beyond the integers'],
      [1.5, 'is not a whole number'],
      ['', 'empty'],
    ] as const) {
      const bad = config(initial);
      expect(bad.success, String(initial)).toBe(false);
      expect(bad.error!.issues[0]!.path).toEqual(['incremental', 'initial']);
      expect(bad.error!.issues[0]!.message).toContain(problem);
    }
  });
});
