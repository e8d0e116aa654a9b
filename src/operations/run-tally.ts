/**
 * One attempt of `sluice run` as it is counted: the run's identity and logger, its progress display, and the tally
 * of what it did (units, records committed per sink, schema changes, dead letters against the failure budget). Made
 * before any lock is taken or anything paid; what the pipeline's config alone refuses (a `replace` sink under
 * shards, a backfill window the source or the sinks cannot take) is refused here.
 *
 * Nothing a unit's processing learns is written into the unit: its results come back as values (the units' counts,
 * each sink's CommitResult) and are noted here, from where the summary and the run history are drawn.
 */
import type { BackfillWindow, CommitResult, DeadLetterFn, Logger, Sink, WorkUnit } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { refuseShardedReplaceSinks } from '../runtime/components.js';
import { createLogger, withContext } from '../runtime/logger.js';
import { Progress } from '../runtime/progress.js';
import type { RunSession } from '../runtime/session.js';
import type { RunRestart } from '../sources/resume-policy.js';
import type { DeadLetterFile } from '../state/dead-letter-file.js';
import type { PaidLedger } from '../state/paid-ledger.js';
import type { UnitCounts, UnitsRun } from '../unit/run-units.js';
import type { UnitLoaded } from '../unit/unit-path.js';
import type { RunOptions, RunSummary } from './api.js';
import { backfillWindow } from './backfill.js';
import { FailureBudget, parseDeadLetterLimit } from './failure-budget.js';
import type { RunHooks } from './run-hooks.js';
import { RunWarnings } from './run-warnings.js';
import type { RunWatch } from './run-watch.js';
import { buildSummary, CommittedRecords, newRunCounters, SchemaChangeLog, type RunCounters } from './summary.js';

export class RunTally {
  readonly startedAt = Date.now();
  readonly counters: RunCounters = newRunCounters();
  readonly progress: Progress;
  /** The run's identity on every JSON log line (logger.ts withContext); `run` is set once the state is open. */
  readonly identity: { run: string | undefined; pipeline: string; shard?: string };
  readonly log: Logger;
  readonly warnings = new RunWarnings();
  /** The backfill asked for (`--from/--to`), judged against the config. */
  readonly askedWindow: BackfillWindow | undefined;
  readonly budget: FailureBudget;

  /** What the stages hand back. */
  units: UnitCounts = { total: 0, done: 0, skipped: 0, failed: 0 };
  private committedPerSink: number[] = [];
  readonly schemaChanges = new SchemaChangeLog();
  readonly committedRecords = new CommittedRecords();
  /** The sinks, once built (the summary names their outputs). */
  private sinks: readonly Sink[] = [];
  private budgetSpent = false;
  private final: RunSummary | undefined;
  /** The run's watchers, once started: their checks' results go in the summary. */
  watch: RunWatch | undefined;
  /** The run's ledger of paid work, once its state is open: what this attempt paid goes in the summary. */
  ledger: PaidLedger | undefined;

  constructor(
    readonly p: LoadedPipeline,
    readonly opts: RunOptions,
    readonly hooks: RunHooks,
    /** Set when this attempt is the one new run `resume.on_missing_job: restart` allows. */
    readonly restart?: RunRestart,
  ) {
    this.progress = new Progress(
      { counters: this.counters, startedAt: this.startedAt },
      {
        tty: opts.progress && !opts.quiet && Boolean(process.stderr.isTTY),
        intervalMs: 10_000,
        write: (s) => process.stderr.write(s),
      },
    );
    const shard = opts.shard && `${opts.shard.index}/${opts.shard.count}`;
    this.identity = { run: undefined, pipeline: p.name, ...(shard && { shard }) };
    const baseLog = hooks.log ?? createLogger({ format: opts.logFormat, level: opts.quiet ? 'warn' : 'info' });
    // On a terminal, log lines appear above the progress bars rather than through them.
    this.log = this.warnings.wrap(this.progress.wrap(withContext(baseLog, this.identity)));
    // Before any state, lock or paid call: no sink can take `replace` from shards (core/sharded-replace.ts).
    refuseShardedReplaceSinks(p.config, opts.shard);
    this.askedWindow =
      opts.backfill &&
      backfillWindow(p.config, { ...opts.backfill, allowDuplicates: opts.allowDuplicates }, hooks.registry);
    this.budget = new FailureBudget(parseDeadLetterLimit(p.config.max_dead_letters as number | string | undefined));
  }

  /** The user's --fresh: not a restart for a missing job, not a replay. */
  get userFresh(): boolean {
    return this.opts.fresh && this.restart === undefined && this.hooks.runId === undefined;
  }

  /** The run's dead-letter file is open: records go there, counted against the budget. */
  deadLettersTo(dlq: DeadLetterFile, runId: string): DeadLetterFn {
    return (d) => {
      this.counters.deadLetters++;
      this.budget.note({ ...d, run: runId });
      dlq.write(d);
    };
  }

  /** The failure budget is spent: no new unit starts (said once); units in flight finish. */
  overBudget(): boolean {
    if (!this.budgetSpent && this.budget.exceeded(this.counters.records)) {
      this.budgetSpent = true;
      this.log.warn(
        `${this.budget.count} records dead-lettered, over max_dead_letters: no new unit starts; units in flight finish`,
      );
    }
    return this.budgetSpent;
  }

  sinksBuilt(sinks: readonly Sink[]): void {
    this.sinks = sinks;
    this.committedPerSink = sinks.map(() => 0);
  }

  /** The units' counts so far, for the progress display. */
  counted(units: Readonly<UnitCounts>): void {
    this.progress.state.unitsTotal = units.total;
    this.progress.state.unitsDone = units.done;
  }

  /** How one unit was loaded: the fast path's loads counted, and a sink's refusal of a file counted and said. */
  loaded(unit: WorkUnit, loaded: UnitLoaded): void {
    if (loaded.path === 'native') this.counters.nativeLoads++;
    if (loaded.refusals.length === 0) return;
    this.counters.nativeFallbacks++;
    const refusals = loaded.refusals.map((r) => `${r.sink} refused the file (${r.reason})`).join('; ');
    this.log.warn(`unit ${unit.id}: ${refusals}; decoding it in JS`);
  }

  /** A sink committed a unit (`unitId`: the unit's own id, counted once however many sinks took it). */
  committed(unitId: string, sink: Sink, r: CommitResult): void {
    this.schemaChanges.note(sink.describe(), r.schemaChanges);
    this.committedRecords.note(unitId, sink, r);
  }

  /** What the units' run handed back; throws what ends the run, in the order that names the true cause. */
  scheduled(result: UnitsRun, session: Pick<RunSession, 'interrupted' | 'interruption'>): void {
    this.units = result.units;
    this.committedPerSink = result.committedPerSink;
    // Not complete: the next run resumes, skipping what was committed. Units in flight were let finish their
    // commit or abandoned with nothing of them committed (unit/run-units.ts).
    if (session.interrupted) throw session.interruption(this.units);
    // Over budget mid-run, the run stopped for it: that, not a unit that failed meanwhile, is the cause.
    if (this.overBudget()) throw this.budget.error(this.counters.records);
    if (result.failure !== undefined) throw result.failure;
    // Every unit was read: a percentage budget is judged on the final counts, however few records.
    if (this.budget.exceeded(this.counters.records, true)) throw this.budget.error(this.counters.records);
  }

  /** Units and records this attempt committed into each sink, for the run history. */
  perSink(): { sink: string; committedUnits: number; records: number }[] {
    return this.sinks.map((s, i) => ({
      sink: s.describe(),
      committedUnits: this.committedPerSink[i] ?? 0,
      records: this.committedRecords.of(s),
    }));
  }

  /** The attempt's summary, drawn once it ended (the run history and the caller see the same). */
  summary(): RunSummary {
    this.final ??= {
      ...this.identity,
      ...buildSummary(
        this.p.name,
        this.units,
        this.counters,
        this.startedAt,
        this.sinks.map((s) => s.describe()),
        this.budget.topReasons(),
        this.schemaChanges.list(),
        this.committedRecords.total,
        this.ledger?.figures(),
      ),
      ...(this.watch && this.watch.checks.length > 0 && { checks: this.watch.checks }),
    };
    return this.final;
  }
}
