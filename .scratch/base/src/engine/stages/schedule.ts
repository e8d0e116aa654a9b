/**
 * Stage 3, schedule: which sinks still need each unit, and the shared scheduler (scheduler.ts) to run the units
 * that some sink needs, under the source's concurrency.
 *
 * Sinks see run-scoped unit ids (`<run>/<unit>`), so tonight's page 1 of a query is not mistaken for last night's;
 * a resumed run keeps its id and so recognises what it committed before it stopped.
 */
import { failpoint } from '../../core/failpoints.js';
import type { Logger, Sink, Source, SourceContext, WorkUnit } from '../../core/types.js';
import type { ProgressState } from '../progress.js';
import { scheduleUnits } from '../scheduler.js';
import { errorText } from '../error-text.js';
import { inShard, type Shard } from './plan.js';

/** Units the engine reads at once when the source does not say. */
export const DEFAULT_CONCURRENCY = 4;

export interface UnitCounts {
  total: number;
  done: number;
  skipped: number;
  failed: number;
}

export interface ScheduleRunOptions {
  runId: string;
  source: Source;
  sctx: SourceContext;
  sinks: readonly Sink[];
  planned: readonly WorkUnit[];
  shard?: Shard;
  log: Logger;
  progress?: ProgressState;
  /** Reads the unit and commits it into `sinks` (those that have not committed it) as `sinkUnit`. */
  runUnit(unit: WorkUnit, sinkUnit: WorkUnit, sinks: Sink[]): Promise<void>;
  /** Test seam: after a unit committed in every sink; a throw fails the unit there, like a crash. */
  afterCommit?(unit: WorkUnit): void | Promise<void>;
  /** Stop starting units (the failure budget is spent): those in flight finish their commit. */
  halted?(): boolean;
}

export interface ScheduleRunResult {
  units: UnitCounts;
  /** The first unit failure. */
  failure?: unknown;
  /** Units this run committed into each sink (same order as `sinks`), for the run history. */
  committedPerSink: number[];
}

export function sinkUnit(runId: string, u: WorkUnit): WorkUnit {
  return { ...u, id: `${runId}/${u.id}` };
}

export async function scheduleRun(opts: ScheduleRunOptions): Promise<ScheduleRunResult> {
  const { source, sctx, sinks, progress, log } = opts;
  const committed = await Promise.all(sinks.map((s) => s.committedUnits()));
  const pending = (u: WorkUnit): Sink[] => {
    const id = sinkUnit(opts.runId, u).id;
    return sinks.filter((_, i) => !committed[i]!.has(id));
  };
  const units: UnitCounts = { total: 0, done: 0, skipped: 0, failed: 0 };
  const committedPerSink = sinks.map(() => 0);
  const done = (): void => {
    units.done++;
    if (progress) progress.unitsDone = units.done;
  };

  const result = await scheduleUnits(opts.planned, {
    concurrency: source.concurrency ?? DEFAULT_CONCURRENCY,
    ...(opts.shard && { accepts: (u: WorkUnit) => inShard(u, opts.shard!) }),
    isCommitted: (u) => pending(u).length === 0,
    run: async (u) => {
      const into = pending(u);
      await opts.runUnit(u, sinkUnit(opts.runId, u), into);
      for (const s of into) committedPerSink[sinks.indexOf(s)]!++;
      await opts.afterCommit?.(u);
      failpoint('engine:after-commit');
    },
    // A committed page still tells a crawl where the next page is (from the checkpointed state).
    ...(source.discover && { discover: (u: WorkUnit) => source.discover!(u, sctx) }),
    stopped: () => sctx.signal.aborted || opts.halted?.() === true,
    onScheduled: () => {
      units.total++;
      if (progress) progress.unitsTotal = units.total;
    },
    onSkipped: () => {
      units.skipped++;
      done();
    },
    onCommitted: done,
    onFailed: (u, err) => {
      // Interrupted: its read was cut short before any sink committed it (a commit under way is let finish), so it
      // is not a failure, only left for the next run.
      if (sctx.signal.aborted) {
        log.info(`unit ${u.id} abandoned: the run was interrupted`);
        return;
      }
      units.failed++;
      log.error(`unit ${u.id} failed: ${errorText(err)}`);
    },
  });
  return { units, committedPerSink, ...(result.failure !== undefined && { failure: result.failure }) };
}
