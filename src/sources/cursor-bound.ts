/**
 * A cursor that cannot be poisoned. An incremental source takes the largest cursor value it loaded as the next run's
 * lower bound; one record dated `9999-12-31T23:59:59Z` would make every later run filter `> 9999-12-31…`, load
 * nothing and succeed, silently, for ever. So a date later than the run's start plus a tolerance is not taken as
 * the cursor: the record is loaded like any other, the unit's checkpoint is the largest value within the bound, and
 * a warning names the unit and the value (the run history keeps the run's warnings).
 *
 * The run's start is on the run's clock (`SourceContext.now`, the service's when the engine knows it). The default
 * tolerance is a day: data stamped in local time but labelled UTC runs up to 14 hours ahead (UTC+14), and such
 * records are common and harmless; a value further ahead is no clock or zone error but a bad record. The price of a
 * tolerance is what a poisoned value within it costs — the next run skips records stamped before it — so it is
 * configurable (`max_ahead_s`) and should be no larger than the sources' time zones need.
 *
 * Only dates and times (cursor-value.ts) are judged: a numeric cursor (an id, a sequence) says nothing about time.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { SourceContext } from '../core/types.js';
import { typedCursorValue, timeMs, type CursorOf, type CursorValue } from './cursor-value.js';

export const DEFAULT_MAX_AHEAD_S = 86_400;

/** The latest cursor value a run may take: its start plus the tolerance. */
export class CursorBound {
  private startMs: number | undefined;

  constructor(private readonly maxAheadS: number = DEFAULT_MAX_AHEAD_S) {}

  /** Fixes the run's start from its clock; called when the run plans (later calls keep the first). */
  start(ctx: Pick<SourceContext, 'now'>): void {
    this.startMs ??= ctx.now?.() ?? Date.now();
  }

  /** Whether `value` may be taken as a cursor: any value but a date past the bound. */
  accepts(value: unknown, ctx: Pick<SourceContext, 'now'>): boolean {
    const ms = timeMs(value);
    if (ms === undefined) return true;
    this.start(ctx);
    return ms <= this.startMs! + this.maxAheadS * 1000;
  }

  /** `2026-11-26T02:00:00.000Z + 1 day`: the bound, as a warning states it. */
  describe(): string {
    const ahead = this.maxAheadS % 86_400 === 0 ? `${this.maxAheadS / 86_400} day(s)` : `${this.maxAheadS} s`;
    return `the run's start (${new Date(this.startMs ?? Date.now()).toISOString()}) + ${ahead}`;
  }
}

/**
 * `sluice state set --cursor <text>`: the value in canonical form, refused (exit 2) where it is not of the cursor's
 * kind, or where it is a time the runs would not take as their lower bound (later than `now` + `max_ahead_s`).
 */
export function cursorToSet(text: string, of: CursorOf & { maxAheadS: number }, now = Date.now()): CursorValue {
  const value = typedCursorValue(text, of, '--cursor');
  const ms = timeMs(value);
  if (ms !== undefined && ms > now + of.maxAheadS * 1000)
    throw new SluiceError(
      `--cursor ${JSON.stringify(text)}: it is later than now + ${of.maxAheadS} s (incremental.max_ahead_s): a run would load nothing after it`,
      {
        hint: `give a value of the cursor's type, like its initial value ${JSON.stringify(of.initial)}`,
        exitCode: EXIT_CODES.config,
      },
    );
  return value;
}

/** The warning for the values of `field` a unit did not take as its cursor. */
export function rejectedCursorWarning(
  unit: string,
  field: string,
  rejected: { count: number; first: string },
  bound: CursorBound,
): string {
  const records = rejected.count === 1 ? '1 record has' : `${rejected.count} records have`;
  return (
    `${unit}: ${records} ${field} later than ${bound.describe()}, e.g. ${JSON.stringify(rejected.first)}: loaded, ` +
    `but not taken as the cursor (a value from the future would make every later run load nothing)`
  );
}
