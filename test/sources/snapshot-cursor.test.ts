/**
 * Backfills of an incremental snapshot (sources/snapshot-cursor.ts): the window typed on the command line parsed to
 * the cursor's type or refused, its conditions in the filter, and the nightly cursor over checkpoints that backfills
 * committed — kept where a window lies in the past, moved only where a window joins it and reaches past it.
 */
import { describe, expect, it } from 'vitest';
import { withCursor } from '../../src/sources/filter.js';
import { lastCursorValue, snapshotBackfill } from '../../src/sources/snapshot-cursor.js';
import { snapshotSchema, type SnapshotConfig } from '../../src/sources/snapshot-schema.js';
import { refusal } from './refusal.js';

const config = (incremental?: object, extra: object = {}): SnapshotConfig =>
  snapshotSchema.parse({
    type: 'snapshot',
    dataset_id: 'gd_l1vikfnt1wgvvqz95w',
    records_limit: 100,
    ...(incremental ? { incremental } : { filter: { name: 'a', operator: 'is_not_null' } }),
    ...extra,
  });
const dated = config({ cursor: 'timestamp', initial: '2025-01-01T00:00:00Z' });

describe('the window of a backfill', () => {
  it("is parsed to the cursor's type: dates as ISO 8601, numbers as numbers, text as typed", () => {
    expect(snapshotBackfill(dated, { from: '2025-03-01', to: '2025-03-02T06:00:00+02:00' })).toEqual({
      of: 'timestamp',
      from: '2025-03-01T00:00:00.000Z',
      to: '2025-03-02T04:00:00.000Z',
    });
    expect(snapshotBackfill(config({ cursor: 'id', initial: 0 }), { from: ' 42 ' })).toEqual({ of: 'id', from: 42 });
    expect(snapshotBackfill(config({ cursor: 'code', initial: 'a' }), { from: 'k', to: 'm' })).toMatchObject({
      from: 'k',
      to: 'm',
    });
  });

  it('is refused (exit 2) for a value not of the cursor type, an empty window, a source without a cursor', () => {
    expect(refusal(() => snapshotBackfill(dated, { from: '2025-13-45' })).message).toBe(
      '--from "2025-13-45": 2025-13-45 is not a day of the calendar, and the cursor timestamp holds dates and times (its initial value is "2025-01-01T00:00:00.000Z")',
    );
    expect(refusal(() => snapshotBackfill(config({ cursor: 'id', initial: 0 }), { from: '1', to: 'x' })).hint).toMatch(
      /give --to a whole number/,
    );
    expect(refusal(() => snapshotBackfill(dated, { from: '2025-03-02', to: '2025-03-01' })).message).toMatch(
      /is not after --from/,
    );
    expect(refusal(() => snapshotBackfill(config(), { from: '2025-03-01' })).message).toMatch(/not incremental/);
    const fixed = config(undefined, {
      filter: undefined,
      dataset_id: undefined,
      snapshot_id: 'snap_abc',
      records_limit: undefined,
    });
    expect(refusal(() => snapshotBackfill(fixed, { from: '2025-03-01' })).message).toMatch(/source\.snapshot_id/);
  });

  it('is refused (exit 2) off the calendar, without an offset, or beyond the exact integers: never sent as typed', () => {
    // Date.parse takes February 30th for March 2nd, and a time without an offset in the machine's own zone.
    expect(refusal(() => snapshotBackfill(dated, { from: '2025-02-30' })).message).toMatch(
      /^--from "2025-02-30": 2025-02-30 is not a day of the calendar/,
    );
    expect(refusal(() => snapshotBackfill(dated, { from: '2025-02-01', to: '2025-02-29' })).message).toMatch(
      /^--to "2025-02-29": 2025-02-29 is not a day of the calendar/,
    );
    for (const from of ['2025-01-01 12:00 PST', '2025-01-01T12:00:00', '2025-01-01T12:00'])
      expect(refusal(() => snapshotBackfill(dated, { from })).message, from).toMatch(/offset/);
    expect(refusal(() => snapshotBackfill(dated, { from: '2025-01-01T12:00' })).hint).toMatch(/2025-03-01T06:00:00Z/);
    const numeric = config({ cursor: 'id', initial: 0 });
    expect(refusal(() => snapshotBackfill(numeric, { from: '9007199254740993' })).message).toMatch(
      /9007199254740993 is beyond the integers a JSON number holds exactly/,
    );
    expect(refusal(() => snapshotBackfill(numeric, { from: '1.5' })).message).toMatch(/not a whole number/);
    expect(snapshotBackfill(numeric, { from: '9007199254740991' })).toEqual({ of: 'id', from: 9007199254740991 });
    // Leap days and offsets as the calendar has them; the value in one form, UTC.
    expect(snapshotBackfill(dated, { from: '2024-02-29T23:30:00-01:00' }).from).toBe('2024-03-01T00:30:00.000Z');
  });

  it('goes into the filter as `> from` and `<= to` under and, as the cursor condition does', () => {
    const leaf = { name: 'followers', operator: '>=', value: 10 };
    expect(withCursor(leaf, 'timestamp', 'A', 'B')).toEqual({
      operator: 'and',
      filters: [
        leaf,
        { name: 'timestamp', operator: '>', value: 'A' },
        { name: 'timestamp', operator: '<=', value: 'B' },
      ],
    });
    expect(withCursor(undefined, 'id', 1, 9)).toEqual({
      operator: 'and',
      filters: [
        { name: 'id', operator: '>', value: 1 },
        { name: 'id', operator: '<=', value: 9 },
      ],
    });
  });
});

describe('the nightly cursor over checkpoints of backfills', () => {
  const nightly = (max: string) => ({ cursor: 'timestamp', max });
  const backfill = (from: string, max: string, to?: string) => ({
    cursor: 'timestamp',
    max,
    backfill: { from, ...(to !== undefined && { to }) },
  });
  const cursor = (...cps: object[]): unknown =>
    lastCursorValue(new Map(cps.map((c, i) => [`u${i}`, c])), 'timestamp', () => true, '2025-01-01');
  /** A date as the cursor holds it (cursor-value.ts): its midnight, UTC. */
  const day = (d: string): string => `${d}T00:00:00.000Z`;

  it('stays where the nightly runs left it when the window lies before it', () => {
    expect(cursor(nightly('2025-03-02'), backfill('2025-01-15', '2025-01-24', '2025-01-25'))).toBe(day('2025-03-02'));
  });

  it('moves forward to what a window loaded when the window joins the cursor and reaches past it', () => {
    expect(cursor(nightly('2025-03-02'), backfill('2025-02-01', '2025-03-05'))).toBe(day('2025-03-05'));
    // Two windows, the later joining only what the earlier reached.
    expect(
      cursor(nightly('2025-03-02'), backfill('2025-03-04', '2025-03-09'), backfill('2025-03-01', '2025-03-05')),
    ).toBe(day('2025-03-09'));
    // No nightly run yet: a window joins the initial value.
    expect(cursor(backfill('2024-12-01', '2025-02-01'))).toBe(day('2025-02-01'));
  });

  it('stays when a window starts after the cursor: the records between would never be loaded', () => {
    expect(cursor(nightly('2025-03-02'), backfill('2025-03-04', '2025-03-09'))).toBe(day('2025-03-02'));
    expect(cursor(backfill('2025-02-01', '2025-03-01'))).toBeUndefined();
  });

  it('counts no value an earlier sluice stored as typed, off the calendar or without an offset, and names it', () => {
    const unreadable: string[] = [];
    const cps = [nightly('2025-02-30'), nightly('2025-01-01 12:00 PST'), nightly('2025-01-20T10:00:00+01:00')];
    const last = lastCursorValue(
      new Map(cps.map((c, i) => [`u${i}`, c])),
      'timestamp',
      () => true,
      '2025-01-01',
      (v, problem) => unreadable.push(`${String(v)}: ${problem}`),
    );
    expect(last).toBe('2025-01-20T09:00:00.000Z');
    expect(unreadable).toEqual([
      '2025-02-30: 2025-02-30 is not a day of the calendar',
      '2025-01-01 12:00 PST: not an ISO 8601 date (YYYY-MM-DD) or time with its offset (YYYY-MM-DDTHH:MM:SSZ or ±hh:mm)',
    ]);
  });
});
