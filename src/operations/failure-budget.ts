/**
 * `max_dead_letters`: how many rejected records a run may leave behind before it stops. A count (`100`) or a share
 * of the records (`"1%"`); unset, there is no limit (the summary still shows every run's letters and their reasons).
 *
 * A share is judged against the records seen so far (records that went through plus records rejected), but only
 * once `MIN_RECORDS_FOR_SHARE` were seen: 1 bad record among the first 3 is not yet a 33% failure rate. At the end
 * of the run it is judged on the final counts, however few: "3 of 5 rejected" must not pass a 10% budget.
 *
 * The budget is per attempt: a resumed run judges the records it reads and the letters they produce. The letters of
 * units an earlier attempt committed stay in the dead-letter file (`sluice dead-letters --replay` loads them once the
 * pipeline is fixed) and are not counted again, so a rerun with a fixed pipeline (or a raised budget) completes,
 * and a rerun with the same pipeline fails again as soon as the units left exceed it. A letter written twice (a unit
 * read again after a transient failure) counts once, by its key.
 */
import { FailureBudgetExceeded } from '../core/errors.js';
import type { DeadLetter } from '../core/types.js';
import { deadLetterKey } from '../state/dead-letter-file.js';

/** Records seen before a percentage budget is judged mid-run. */
export const MIN_RECORDS_FOR_SHARE = 1000;

/** Reasons the summary and the budget's error name, most frequent first. */
export const REASONS_SHOWN = 3;

export type DeadLetterLimit = { kind: 'count'; max: number } | { kind: 'share'; percent: number };

/** `100` or `"1%"` (as the schema accepts them) → a limit; undefined → no limit. */
export function parseDeadLetterLimit(value: number | string | undefined): DeadLetterLimit | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return { kind: 'count', max: value };
  const m = /^(\d+(?:\.\d+)?)\s*%$/.exec(value.trim());
  if (!m) throw new Error(`max_dead_letters: ${value} is neither a count nor a percentage`);
  return { kind: 'share', percent: Number(m[1]) };
}

export function describeLimit(limit: DeadLetterLimit): string {
  return limit.kind === 'count' ? `${limit.max}` : `${limit.percent}% of records`;
}

export interface ReasonCount {
  reason: string;
  count: number;
}

/** Letters too: the summary shows the count and the first reasons whether or not there is a budget. */
export class FailureBudget {
  private readonly keys = new Set<string>();
  private readonly reasons = new Map<string, number>();

  constructor(readonly limit: DeadLetterLimit | undefined) {}

  /** A letter of this run (`run` set to the run id, so keys match the stored ones). */
  note(d: DeadLetter & { run?: string; index?: number }): void {
    const key = deadLetterKey(d);
    if (this.keys.has(key)) return;
    this.keys.add(key);
    this.reasons.set(d.reason, (this.reasons.get(d.reason) ?? 0) + 1);
  }

  get count(): number {
    return this.keys.size;
  }

  /** Distinct reasons, most frequent first (ties in order of first appearance). */
  topReasons(n = REASONS_SHOWN): ReasonCount[] {
    return [...this.reasons]
      .map(([reason, count]) => ({ reason, count }))
      .sort((a, b) => b.count - a.count)
      .slice(0, n);
  }

  /**
   * Over budget, given this attempt's records so far. `final`: the run read every unit, so a share is judged
   * however few records there were.
   */
  exceeded(records: number, final = false): boolean {
    const limit = this.limit;
    if (!limit) return false;
    if (limit.kind === 'count') return this.count > limit.max;
    const seen = records + this.count;
    if (seen === 0 || (!final && seen < MIN_RECORDS_FOR_SHARE)) return false;
    return (this.count / seen) * 100 > limit.percent;
  }

  error(records: number): FailureBudgetExceeded {
    const limit = this.limit!;
    const seen = records + this.count;
    const share =
      limit.kind === 'share' ? ` (${formatPercent((this.count / Math.max(seen, 1)) * 100)} of ${seen} records)` : '';
    return new FailureBudgetExceeded(
      `${this.count} records dead-lettered${share}, over the budget of ${describeLimit(limit)} (max_dead_letters): ${formatReasons(this.topReasons())}`,
      {
        hint:
          'committed units stay committed: see the records with `sluice dead-letters <pipeline.yaml>`, fix the ' +
          'pipeline (or raise max_dead_letters) and run the same command again to resume',
      },
    );
  }
}

/** `odd id ×12; missing url ×3`. */
export function formatReasons(reasons: readonly ReasonCount[]): string {
  return reasons.map((r) => `${r.reason} ×${r.count}`).join('; ');
}

function formatPercent(p: number): string {
  return `${p >= 10 ? Math.round(p) : p.toFixed(1)}%`;
}
