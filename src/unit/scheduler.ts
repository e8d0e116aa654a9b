/**
 * The one scheduler of work units: each planned unit once, under a concurrency limit; a unit hands back the units it
 * leads to (the next crawl page), and a unit committed earlier is skipped but still asked for them (a committed crawl
 * page still knows its next page); the first failure stops new units from starting while those in flight finish. A
 * run's units go through it (run-units.ts), and so do the crawl driver of the tests and the crawl benchmark
 * (test/support/drive-crawl.ts), which run a bare source with it.
 */
import pLimit from 'p-limit';
import type { WorkUnit } from '../core/types.js';

export interface ScheduleHooks {
  /** Units read at once. */
  concurrency: number;
  /** Units outside this run's share (another shard's) are neither run nor counted. Default: all are in. */
  accepts?(unit: WorkUnit): boolean;
  /** Committed by an earlier run: not run again. */
  isCommitted(unit: WorkUnit): boolean;
  /** Reads and commits the unit, handing back the units it leads to; a throw is the run's failure. */
  run(unit: WorkUnit): Promise<readonly WorkUnit[] | void>;
  /** The units a unit committed earlier (skipped) leads to. */
  discover?(unit: WorkUnit): readonly WorkUnit[];
  /** Stop starting units (an interrupt, a budget): those in flight finish. */
  stopped?(): boolean;
  /** Told as each unit is scheduled, skipped, committed, or failed. */
  onScheduled?(unit: WorkUnit): void;
  onSkipped?(unit: WorkUnit): void;
  onCommitted?(unit: WorkUnit): void;
  onFailed?(unit: WorkUnit, err: unknown): void;
}

export interface ScheduleResult {
  /** The first unit failure; undefined when every unit scheduled was committed or skipped. */
  failure?: unknown;
  scheduled: number;
  skipped: number;
  committed: number;
  failed: number;
}

export async function scheduleUnits(planned: Iterable<WorkUnit>, hooks: ScheduleHooks): Promise<ScheduleResult> {
  const result: ScheduleResult = { scheduled: 0, skipped: 0, committed: 0, failed: 0 };
  const limit = pLimit(Math.max(1, hooks.concurrency));
  const seen = new Set<string>();
  const running: Promise<void>[] = [];
  const halted = (): boolean => result.failure !== undefined || hooks.stopped?.() === true;

  const schedule = (u: WorkUnit): void => {
    if (seen.has(u.id)) return;
    if (hooks.accepts && !hooks.accepts(u)) return;
    seen.add(u.id);
    result.scheduled++;
    hooks.onScheduled?.(u);
    if (hooks.isCommitted(u)) {
      result.skipped++;
      hooks.onSkipped?.(u);
      for (const next of hooks.discover?.(u) ?? []) schedule(next);
      return;
    }
    running.push(
      limit(async () => {
        if (halted()) return;
        let next: readonly WorkUnit[] | void;
        try {
          next = await hooks.run(u);
        } catch (err) {
          result.failed++;
          result.failure ??= err;
          hooks.onFailed?.(u, err);
          return;
        }
        result.committed++;
        hooks.onCommitted?.(u);
        for (const n of next ?? []) schedule(n);
      }),
    );
  };

  for (const u of planned) schedule(u);
  // Units discovered while waiting are pushed onto `running`: drain until nothing new was added.
  while (running.length > 0) await Promise.all(running.splice(0));
  return result;
}
