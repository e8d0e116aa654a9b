/**
 * The engine's side of the run's watchers (src/observe/: notifications, metrics, traces) and of the checks after
 * the load: it keeps what they are told (records per sink, units committed, check results) so the run itself only
 * calls it at a handful of points: started, around each unit, each commit, checks after finish, ended. What the run
 * paid for is read from the run's ledger (state/paid-ledger.ts), live, like the summary and runs.jsonl read it.
 */
import type { ClientOptions } from '../client/api.js';
import type { PaidFigures } from '../core/paid-work.js';
import type { CommitResult, Logger, Sink, WorkUnit } from '../core/types.js';
import type { CheckConfig } from '../observe/checks/config.js';
import { checksFailure, runChecks } from '../observe/checks/run-checks.js';
import type { RunEnded, RunIdentity, RunObserver } from '../observe/events.js';
import { observeRun, startObservers, type CheckResult, type RunTotals, type ObserveConfig } from '../observe/index.js';
import type { RunSummary } from './api.js';
import type { ProgressState } from '../runtime/progress.js';
import { outcomeOf } from '../state/run-history.js';
import type { RunCounters } from './summary.js';
import { runFailure } from './summary.js';

export interface WatchedRun {
  identity: RunIdentity;
  resumed: boolean;
  startedAt: number;
  /** The run's state directory (its shard's), held by it until it ends. */
  stateDir: string;
  sinks: readonly Sink[];
  counters: RunCounters;
  progress: ProgressState;
  /** What the run has paid for so far: its ledger's figures for this attempt. */
  paid: () => PaidFigures;
}

export class RunWatch {
  private readonly observers: Required<RunObserver>;
  private run: WatchedRun | undefined;
  private recordsPerSink: number[] = [];
  private unitsCommitted = 0;
  private final: RunSummary['units'] | undefined;
  /** The checks' results, once they ran. */
  checks: CheckResult[] = [];

  private constructor(
    private readonly watchers: RunObserver[],
    log: Logger,
  ) {
    this.observers = observeRun(watchers, log);
  }

  /** Only what the pipeline (`notify:`, `metrics:`) and the environment (`OTEL_*`) ask for is loaded. */
  static async start(config: ObserveConfig, opts: { baseDir: string; log: Logger }): Promise<RunWatch> {
    return new RunWatch(await startObservers(config, { ...opts, env: process.env }), opts.log);
  }

  /** The service connection's call hook: none when nobody watches (no cost per request). */
  serviceCalls(): Pick<ClientOptions, 'onCall'> {
    if (this.watchers.length === 0) return {};
    return { onCall: (call) => this.observers.serviceCall(call) };
  }

  started(run: WatchedRun): void {
    this.run = run;
    this.recordsPerSink = run.sinks.map(() => 0);
    this.observers.runStarted({
      ...run.identity,
      resumed: run.resumed,
      startedAt: run.startedAt,
      stateDir: run.stateDir,
      sinks: run.sinks.map((s) => s.describe()),
      totals: () => this.totals(),
    });
  }

  /** Each unit's work inside the watchers' `unit` (a trace span); none when nobody watches. */
  get around(): ((unit: WorkUnit, work: () => Promise<void>) => Promise<void>) | undefined {
    if (this.watchers.length === 0) return undefined;
    return async (unit, work) => {
      await this.observers.unit(unit, work);
      this.unitsCommitted++;
    };
  }

  committed(unit: WorkUnit, sink: Sink, r: CommitResult): void {
    const i = this.run?.sinks.indexOf(sink) ?? -1;
    if (i >= 0) this.recordsPerSink[i]! += r.records;
    if (this.watchers.length === 0) return;
    this.observers.unitCommitted({ unit: unit.id, sink: sink.describe(), records: r.records });
    if (r.schemaChanges?.length) this.observers.schemaChanged({ sink: sink.describe(), changes: r.schemaChanges });
  }

  /** The sinks' `checks:` (after `finishRun`); throws ChecksFailed when an `error` check failed. */
  async check(sinkConfigs: readonly object[], opts: { log: Logger; now?: () => number }): Promise<void> {
    const sinks = this.run?.sinks ?? [];
    const configs = sinkConfigs as readonly { checks?: CheckConfig[] }[];
    if (!configs.some((c) => c.checks !== undefined && c.checks.length > 0)) return;
    this.checks = await runChecks(
      sinks.map((sink, i) => ({
        sink,
        checks: configs[i]?.checks ?? [],
        runRecords: this.recordsPerSink[i] ?? 0,
      })),
      opts,
    );
    const failed = checksFailure(this.checks);
    if (failed) throw failed;
  }

  /** Told while the run still holds its state directory: what the next run must find is saved (the metrics' counters). */
  async ending(failure: unknown, summary: RunSummary): Promise<void> {
    this.final = summary.units;
    if (!this.run || this.watchers.length === 0) return;
    await this.observers.runEnding(this.endedEvent(this.run, failure, summary));
  }

  /** Told last, everything committed and released: a slow webhook cannot hold the pipeline's lock. */
  async ended(failure: unknown, summary: RunSummary): Promise<void> {
    this.final = summary.units;
    if (!this.run || this.watchers.length === 0) return;
    await this.observers.runEnded(this.endedEvent(this.run, failure, summary));
  }

  private endedEvent(run: WatchedRun, failure: unknown, summary: RunSummary): RunEnded {
    const outcome = outcomeOf(failure);
    const fix = failure === undefined ? undefined : runFailure(failure, summary).hint;
    return {
      ...run.identity,
      outcome:
        outcome.status === 'succeeded' ? 'succeeded' : outcome.status === 'interrupted' ? 'interrupted' : 'failed',
      exitCode: outcome.exitCode ?? 1,
      ...(outcome.cause !== undefined && { cause: outcome.cause }),
      ...(fix !== undefined && { fix }),
      startedAt: run.startedAt,
      durationMs: summary.durationMs,
      totals: this.totals(),
      schemaChanges: summary.schemaChanges,
      checks: this.checks,
    };
  }

  /** Live while the run goes (from the progress counts), final once it ended. */
  private totals(): RunTotals {
    const run = this.run!;
    const u = this.final;
    const c = run.counters;
    return {
      units: u
        ? { total: u.total, committed: u.done - u.skipped, skipped: u.skipped, failed: u.failed }
        : {
            total: run.progress.unitsTotal,
            committed: this.unitsCommitted,
            skipped: Math.max(0, run.progress.unitsDone - this.unitsCommitted),
            failed: 0,
          },
      records: c.records,
      bytes: c.bytes,
      retries: c.retries,
      deadLetters: c.deadLetters,
      recordsPerSink: run.sinks.map((s, i) => ({ sink: s.describe(), records: this.recordsPerSink[i] ?? 0 })),
      ...run.paid(),
    };
  }
}
