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
 * Only date strings (`YYYY-MM-DD…`) are judged: a numeric cursor (an id, a sequence) says nothing about time.
 */
import type { SourceContext } from '../core/types.js';

export const DEFAULT_MAX_AHEAD_S = 86_400;

export function isDateText(v: unknown): v is string {
  return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v));
}

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
    if (!isDateText(value)) return true;
    this.start(ctx);
    return Date.parse(value) <= this.startMs! + this.maxAheadS * 1000;
  }

  /** `2026-11-26T02:00:00.000Z + 1 day`: the bound, as a warning states it. */
  describe(): string {
    const ahead = this.maxAheadS % 86_400 === 0 ? `${this.maxAheadS / 86_400} day(s)` : `${this.maxAheadS} s`;
    return `the run's start (${new Date(this.startMs ?? Date.now()).toISOString()}) + ${ahead}`;
  }
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
