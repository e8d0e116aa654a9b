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
  const slots = new ReadSlots(Math.max(1, hooks.concurrency), Math.max(0, hooks.committing ?? 0));
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
      (async () => {
        const slot = await slots.take();
        try {
          if (halted()) return;
          let next: readonly WorkUnit[] | void;
          try {
            next = await hooks.run(u, () => slot.read());
          } catch (err) {
            result.failed++;
            result.failure ??= err;
            hooks.onFailed?.(u, err);
            return;
          }
          result.committed++;
          hooks.onCommitted?.(u);
          for (const n of next ?? []) schedule(n);
        } finally {
          slot.done();
        }
      })(),
    );
  };

  for (const u of planned) schedule(u);
  // Units discovered while waiting are pushed onto `running`: drain until nothing new was added.
  while (running.length > 0) await Promise.all(running.splice(0));
  return result;
}

/** A unit's hold on the scheduler: `read()` moves it from reading to committing (if there is room), `done()` ends it. */
interface Slot {
  read(): void;
  done(): void;
}

/**
 * At most `readers` units reading and `committers` read but committing; waiters start in arrival order. A unit that
 * said its reading is over while every committer's place was taken stays a reader until one frees up.
 */
class ReadSlots {
  private reading = 0;
  private committing = 0;
  private readonly waiters: (() => void)[] = [];
  /** Readers done reading, waiting for a committer's place. */
  private readonly readDone: (() => void)[] = [];

  constructor(
    private readonly readers: number,
    private readonly committers: number,
  ) {}

  async take(): Promise<Slot> {
    if (this.reading >= this.readers || this.waiters.length > 0)
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.reading++;
    let state: 'reading' | 'committing' | 'done' = 'reading';
    const toCommitting = (): void => {
      if (state !== 'reading') return;
      state = 'committing';
      this.reading--;
      this.committing++;
    };
    return {
      read: () => {
        if (state !== 'reading' || this.committers === 0) return;
        this.readDone.push(toCommitting);
        this.wake();
      },
      done: () => {
        if (state === 'done') return;
        const waiting = this.readDone.indexOf(toCommitting);
        if (waiting >= 0) this.readDone.splice(waiting, 1);
        if (state === 'reading') this.reading--;
        else this.committing--;
        state = 'done';
        this.wake();
      },
    };
  }

  private wake(): void {
    while (this.committing < this.committers && this.readDone.length > 0) this.readDone.shift()!();
    while (this.reading < this.readers && this.waiters.length > 0) {
      this.reading++;
      this.waiters.shift()!();
    }
  }
}
