/**
 * What a run tells the world while it runs: the one interface between the engine and everything that watches it
 * (notifications, metrics, traces). The engine calls it in a handful of places; each watcher implements the events
 * it cares about. Nothing here may fail or slow the load: `observeRun` wraps every watcher so a throw is logged and
 * forgotten. Two events are awaited: `runEnding`, while the run still holds its state directory (a local file only),
 * and `runEnded`, after the run's data is committed and its locks released (webhooks and pushes go there).
 *
 * This module sits beside the engine, below it: it imports from core only, the engine imports it, never the reverse.
 */
import type { PaidLine } from '../core/paid-work.js';
import type { Logger, SchemaChange, WorkUnit } from '../core/types.js';

/** Which run: on every log line, summary, notification, metric and span. */
export interface RunIdentity {
  run: string;
  pipeline: string;
  /** `2/4` for `--shard 2/4`; absent for an unsharded run. */
  shard?: string;
}

/**
 * The run's counts so far, read live (periodic metrics pushes) or at the end. The paid figures are the run's ledger
 * of paid work (core/paid-work.ts) for this attempt, the same numbers as the summary's and runs.jsonl's fields of the
 * same names: watchers may rely on these three names staying as they are.
 */
export interface RunTotals {
  units: { total: number; committed: number; skipped: number; failed: number };
  records: number;
  bytes: number;
  retries: number;
  deadLetters: number;
  /** Records committed by this run per sink (`sink.describe()`), in the pipeline's sink order. */
  recordsPerSink: { sink: string; records: number }[];
  /** Calls the service billed: filter jobs, deep lookup triggers and enrichments, `POST /request` pages, zone changes. */
  paidCalls: number;
  /** Records the service charged (filter jobs' snapshots once ready, deep lookups' matched records). */
  recordsCharged: number;
  /** The ledger's lines: each kind of billed call, what it was for, how many, retried, wasted, records charged. */
  paid: PaidLine[];
}

export interface RunStarted extends RunIdentity {
  resumed: boolean;
  /** ms since the epoch. */
  startedAt: number;
  sinks: string[];
  /**
   * The run's state directory (a shard's own, for a sharded run), held by this run alone until it ended: a watcher
   * keeps there what the next run must find (the metrics' counters).
   */
  stateDir: string;
  /** The totals as they are now: watchers that report during the run read them when they report. */
  totals(): RunTotals;
}

export interface SinkSchemaChange {
  sink: string;
  changes: SchemaChange[];
}

/** One check's outcome (observe/checks). */
export interface CheckResult {
  sink: string;
  /** The check's `name`, or its type and columns (`not_null(id)`). */
  name: string;
  type: string;
  severity: 'error' | 'warn';
  passed: boolean;
  /** One line: what was found (`3 rows where id is null`, `newest fetched_at 30h ago, over 26h`). */
  message: string;
  /** Violating rows found, when the check counts rows. */
  violations?: number;
  /** A few of the violating rows (or values), for the report. */
  sample?: Record<string, unknown>[];
}

export type RunOutcome = 'succeeded' | 'failed' | 'interrupted';

export interface RunEnded extends RunIdentity {
  outcome: RunOutcome;
  exitCode: number;
  /** The error's first line, for a run that did not succeed. */
  cause?: string;
  /** The error's fix line (`SluiceError.hint`). */
  fix?: string;
  startedAt: number;
  durationMs: number;
  totals: RunTotals;
  schemaChanges: SinkSchemaChange[];
  checks: CheckResult[];
}

/** Told once a service call ends. */
export type ServiceCallEnd = (outcome: { status?: number; error?: unknown }) => void;

export interface ServiceCall {
  method: string;
  path: string;
  /** Billed by the service, or starts paid or account-changing work (`POST /request` pages included). */
  paid: boolean;
}

/** A watcher of runs. Every event is optional; none may throw into the engine (observeRun guards them). */
export interface RunObserver {
  runStarted?(e: RunStarted): void;
  /** Around every attempt at one unit (a watcher may run `work` in a context of its own, e.g. a trace span). */
  unit?<T>(unit: WorkUnit, work: () => Promise<T>): Promise<T>;
  /** A unit was committed into a sink (or found committed: `records` 0). */
  unitCommitted?(e: { unit: string; sink: string; records: number }): void;
  /** A call to the service started; the returned function is told how it ended. */
  serviceCall?(call: ServiceCall): ServiceCallEnd | undefined;
  /** Columns a sink added or widened while committing a unit. */
  schemaChanged?(e: SinkSchemaChange): void;
  /**
   * The run's outcome is known and it still holds its state directory: save what the next run must find (a local
   * file, never the network: the pipeline's lock waits for it). Told before `runEnded`, with the same outcome.
   */
  runEnding?(e: RunEnded): Promise<void>;
  /** The run ended (data committed, locks released): report, flush, stop timers. */
  runEnded?(e: RunEnded): Promise<void>;
}

/**
 * Every watcher as one, each event guarded: a watcher's failure is logged as a warning and the run goes on. With no
 * watcher, each event is a cheap no-op and `unit` calls the work directly.
 */
export function observeRun(observers: readonly RunObserver[], log: Logger): Required<RunObserver> {
  const guard = (what: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      log.warn(`${what}: ${(err as Error)?.message ?? String(err)} (the run goes on)`);
    }
  };
  const around = observers.filter((o) => o.unit);
  /** An awaited event, told to every watcher at once; one that throws is a warning. */
  const awaitEach = async (what: string, tell: (o: RunObserver) => Promise<void> | undefined): Promise<void> => {
    await Promise.all(
      observers.map(async (o) => {
        try {
          await tell(o);
        } catch (err) {
          log.warn(`${what}: ${(err as Error)?.message ?? String(err)}`);
        }
      }),
    );
  };
  return {
    runStarted: (e) => observers.forEach((o) => guard('observing the run', () => o.runStarted?.(e))),
    unit: <T>(unit: WorkUnit, work: () => Promise<T>): Promise<T> =>
      around.reduceRight<() => Promise<T>>((next, o) => () => o.unit!(unit, next), work)(),
    unitCommitted: (e) => observers.forEach((o) => guard('observing a commit', () => o.unitCommitted?.(e))),
    serviceCall: (call) => {
      const ends: ServiceCallEnd[] = [];
      for (const o of observers)
        guard('observing a service call', () => {
          const end = o.serviceCall?.(call);
          if (end) ends.push(end);
        });
      if (ends.length === 0) return undefined;
      return (outcome) => ends.forEach((end) => guard('observing a service call', () => end(outcome)));
    },
    schemaChanged: (e) => observers.forEach((o) => guard('observing a schema change', () => o.schemaChanged?.(e))),
    runEnding: (e) => awaitEach('saving what the next run must find', (o) => o.runEnding?.(e)),
    runEnded: (e) => awaitEach('reporting the run', (o) => o.runEnded?.(e)),
  };
}
