/**
 * The one scheduler of work units: each planned unit once, under a concurrency limit; a unit hands back the units it
 * leads to (the next crawl page), and a unit committed earlier is skipped but still asked for them (a committed crawl
 * page still knows its next page); the first failure stops new units from starting while those in flight finish. A
 * run's units go through it (run-units.ts), and so do the crawl driver of the tests and the crawl benchmark
 * (test/support/drive-crawl.ts), which run a bare source with it.
 *
 * Reading and committing are bounded apart: `concurrency` units read at once, and a unit may say its reading is
 * over before it has committed (`read()`: a sink took its file whole and only has its database's part left to do),
 * which lets the next unit start reading while it commits; at most `committing` units wait so (default 0: a unit
 * reads until it has committed, as a source's `concurrency` has always meant). A sink that commits several units
 * together (the DuckDB sink's group of units, sinks/duckdb/group.ts) so gets units to commit while the next are read.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { WorkUnit } from '../core/types.js';

export interface ScheduleHooks {
  /** Units read at once. */
  concurrency: number;
  /** Units read but not yet committed at once (see the file's comment); default 0. */
  committing?: number;
  /** Units outside this run's share (another shard's) are neither run nor counted. Default: all are in. */
  accepts?(unit: WorkUnit): boolean;
  /** Committed by an earlier run: not run again. */
  isCommitted(unit: WorkUnit): boolean;
  /**
   * Reads and commits the unit, handing back the units it leads to; a throw is the run's failure. `read` may be
   * called once the unit's reading is over, before it has committed.
   */
  run(unit: WorkUnit, read: () => void): Promise<readonly WorkUnit[] | void>;
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
  const held = holding(
    pLimit(Math.max(1, hooks.concurrency)),
    (hooks.committing ?? 0) > 0 ? pLimit(hooks.committing!) : undefined,
  );
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
      held(async (read) => {
        if (halted()) return;
        let next: readonly WorkUnit[] | void;
        try {
          next = await hooks.run(u, read);
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

/**
 * Runs each unit's work under a reader's place; when the work says its reading is over (`read()`) and there are
 * committers, it moves to a committer's place as soon as one is free — holding its reader's place until then — and
 * keeps that until it ends. Waiters start in arrival order (p-limit's queues).
 */
function holding(
  readers: LimitFunction,
  committers: LimitFunction | undefined,
): (work: (read: () => void) => Promise<void>) => Promise<void> {
  return (work) =>
    new Promise<void>((resolve, reject) => {
      void readers(async () => {
        let readOver = (): void => undefined;
        const reading = new Promise<void>((r) => (readOver = r));
        const outcome = work(() => readOver());
        const ended = outcome.then(
          () => undefined,
          () => undefined,
        );
        outcome.then(resolve, reject);
        await Promise.race([reading, ended]);
        if (!committers) return ended;
        let placed = (): void => undefined;
        const place = new Promise<void>((r) => (placed = r));
        void committers(() => (placed(), ended));
        await Promise.race([place, ended]);
      });
    });
}
