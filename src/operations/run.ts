/**
 * `sluice run`: one attempt, as a story told top to bottom in `runAttempt` — the pipeline built once (the runtime) →
 * open the run (its lock, its state: resume or start, the history line) → open the outputs → where the cursor
 * starts → plan → every unit along its path (unit/run-units.ts → unit/unit-path.ts: read, decode, transforms, store
 * gate, sinks, commit) → finish → checks → close. What the attempt holds is released by the runtime's session in
 * reverse order however it ends; what it did is counted in its tally (run-tally.ts), from which the summary and the
 * run history are drawn.
 *
 * Exactly-once across crashes comes from three rules: (1) paid job ids are checkpointed in the state file before
 * anyone waits on them (the state is kept across a resume: state/run-state.ts); (2) a unit is committed by the sink
 * together with its id, so a rerun skips it (unit/run-units.ts); (3) a unit that failed half-way committed nothing,
 * so reading it again from the start loses and duplicates nothing. What the service billed is recorded once, in the
 * run's ledger of paid work (state/paid-ledger.ts), which the summary, runs.jsonl, webhooks and metrics all read.
 *
 * One run of a pipeline at a time: the state directory is locked first, then each file sink's output directory. An
 * interrupt (`RunOptions.signal`) stops new units at once; units in flight may commit during its grace
 * (`limits.interrupt_grace_s`, runtime/interrupt.ts), then their reads are aborted; the run ends in InterruptedError.
 */
import { failpoint } from '../core/failpoints.js';
import type { BackfillWindow, WorkUnit } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { PipelineRuntime } from '../runtime/runtime.js';
import { restartAfter, staleAfterMs, staleRestart, startOver, type RunRestart } from '../sources/resume-policy.js';
import { DeadLetterFile } from '../state/dead-letter-file.js';
import { PAID_LEDGER_KEY, PaidLedger, paidByAttempt } from '../state/paid-ledger.js';
import { outcomeOf, RunHistory, runHistoryFile, type RunRecord } from '../state/run-history.js';
import { forgetKept, openRunState, type RunState } from '../state/run-state.js';
import { inShard, runUnits } from '../unit/run-units.js';
import { UnitPath } from '../unit/unit-path.js';
import type { RunOptions, RunSummary } from './api.js';
import { backfillOfRun } from './backfill.js';
import { refuseFreshDuplicates } from './fresh-guard.js';
import { findPrepared, seedPrepared } from './prepare.js';
import type { RunHooks } from './run-hooks.js';
import { RunTally } from './run-tally.js';
import { RunWatch } from './run-watch.js';
import { runFailure } from './summary.js';

export function runPipeline(p: LoadedPipeline, opts: RunOptions, hooks: RunHooks = {}): Promise<RunSummary> {
  return runAttempt(p, opts, hooks).catch((err: unknown) => {
    // `resume.on_missing_job: restart`: the saved paid job is gone; one new run (a new paid job) per invocation.
    const restart = hooks.runId === undefined ? restartAfter(err, p.config.resume) : undefined;
    if (restart === undefined) throw err;
    return runAttempt(p, { ...opts, fresh: true }, hooks, restart);
  });
}

async function runAttempt(
  p: LoadedPipeline,
  opts: RunOptions,
  hooks: RunHooks,
  restart?: RunRestart,
): Promise<RunSummary> {
  const tally = new RunTally(p, opts, hooks, restart);
  // Notifications, metrics, traces and checks (src/observe/), told what happens through one object. Told last that
  // the run ended, after every lock was released: a slow webhook cannot hold the pipeline's lock.
  const watch = await RunWatch.start(p.config, { baseDir: p.baseDir, log: tally.log });
  tally.watch = watch;
  const rt = new PipelineRuntime(p, {
    command: opts.command ?? 'sluice run',
    log: tally.log,
    ...(opts.shard && { shard: opts.shard }),
    ...(opts.signal && { signal: opts.signal }),
    ...(opts.waitForLockMs !== undefined && { waitForLockMs: opts.waitForLockMs }),
    ...(hooks.registry && { registry: hooks.registry }),
    ...(hooks.source && { source: hooks.source }),
    ...(hooks.onService && { onService: hooks.onService }),
    ...watch.serviceCalls(),
    counters: tally.counters,
  });
  tally.sinksBuilt(rt.sinkList);
  warnIfPoolCapsConcurrency(rt);
  let failure: unknown;
  let recorded = false;
  try {
    const run = await openRun(rt, tally, hooks, restart);
    recorded = true;
    // While the lock is held (released after this): the metrics' counters the next run restores.
    rt.session.defer("saving the run's metrics", (f) => watch.ending(f, tally.summary()));
    const { state, runId, ledger } = run;
    const dlq = rt.session.hold(
      'closing the dead-letter file',
      new DeadLetterFile(rt.paths.deadLetterFile, runId),
      (f) => f.close(),
      'fatal',
    );
    await dlq.open();
    const deadLetter = tally.deadLettersTo(dlq, runId);
    watch.started({
      identity: { ...tally.identity, run: runId },
      resumed: run.resumed,
      startedAt: tally.startedAt,
      stateDir: rt.paths.stateDir,
      sinks: rt.sinkList,
      counters: tally.counters,
      progress: tally.progress.state,
      paid: () => ledger.figures(),
    });

    await rt.openOutputs({ fresh: !run.resumed, runId, deadLetter, counters: tally.counters });
    // Before anything is paid or written.
    if (tally.userFresh && opts.allowDuplicates !== true)
      await refuseFreshDuplicates(
        rt.sinks.map((s) => ({ sink: s.sink, write: s.config.write })),
        runId,
      ).catch(async (err: unknown) => {
        // The unfinished run it would have replaced stays resumable.
        await run.undoFresh?.();
        throw err;
      });

    // Where the cursor starts: a restart for a missing paid job starts a new run, not a new cursor.
    const reset = opts.resetCursor === true || (opts.fresh && restart === undefined);
    // Starting over forgets what earlier runs paid to learn (the places a search found): it is learnt again.
    if (reset) await forgetKept(state);
    const checkpoints = await cursorOfRun(rt, tally, runId, reset);
    const sourceRun = {
      state,
      paid: ledger,
      counters: tally.counters,
      deadLetter,
      ...(run.window && { backfill: run.window }),
      ...(checkpoints && { checkpoints }),
    };
    const ctx = rt.sourceContext(sourceRun);
    if (opts.progress && !opts.quiet) rt.session.hold('progress', tally.progress, (pr) => pr.stop()).start();

    // Plan: free checks against the service first (a zone typo fails here, not after paid requests), then the
    // source's units (which may start ONE paid job, checkpointed before it is waited on); a shard keeps its share.
    await rt.source.preflight?.(ctx);
    const planned = (await rt.source.plan(ctx)).filter((u) => !opts.shard || inShard(u, opts.shard));
    tally.progress.state.plan = planLine(planned, opts.shard);

    const units = await runUnits({
      runId,
      planned,
      path: new UnitPath({
        source: rt.source,
        context: (signal) => rt.sourceContext({ ...sourceRun, signal }),
        transforms: rt.transforms,
        sinks: rt.sinks,
        fastPath: p.config.fast_path !== false,
        tmpDir: rt.paths.tmpDir,
        log: tally.log,
        counters: tally.counters,
        deadLetter,
        ...(hooks.firstTransform && { firstTransform: hooks.firstTransform }),
        committed: (u, sink, r) => {
          tally.committed(u.id, sink, r);
          watch.committed(u, sink, r);
        },
      }),
      source: rt.source,
      context: ctx,
      sinks: rt.sinkList,
      ...(opts.shard && { shard: opts.shard }),
      retry: rt.retry,
      log: tally.log,
      counters: tally.counters,
      signal: rt.session.signal,
      cancel: rt.session.units,
      // A deadline bounds what the network sends; a local file takes as long as it takes.
      ...(!rt.offline && { timeoutMs: rt.limits.unitTimeoutMs }),
      halted: () => tally.overBudget(),
      events: {
        ...(watch.around && { around: watch.around }),
        counted: (u) => tally.counted(u),
        loaded: (u, loaded) => {
          // Committed: a page it paid for is kept, and paid for again only by another run.
          ledger.settled(u.id);
          tally.loaded(u, loaded);
        },
        ...(hooks.afterCommit && { afterCommit: hooks.afterCommit }),
      },
    });
    tally.scheduled(units, rt.session);

    // Finish: every unit committed; the sinks finish (a `replace` swaps its new generation in), then the run is
    // complete, so the next invocation starts a new run.
    for (const s of rt.sinkList) await s.finish();
    failpoint('engine:before-complete');
    await state.set('run:complete', true);
    // The data stays committed whatever the checks find.
    await watch.check(
      rt.sinks.map((s) => s.config),
      { log: tally.log, now: () => rt.service.now() },
    );
  } catch (err) {
    // Whatever an aborted read (or a wait for the lock) threw, the cause is the interrupt.
    failure = rt.session.interrupted ? rt.session.interruption(tally.units) : err;
  }
  failure = await rt.close(failure);
  // Refused before the attempt was recorded (a lock held, a backfill over an unfinished run): nothing to summarise.
  if (!recorded) throw failure;
  const summary = tally.summary();
  await watch.ended(failure, summary);
  if (failure !== undefined) throw runFailure(failure, summary);
  return summary;
}

interface OpenedRun extends RunState {
  window?: BackfillWindow;
  /** The run's ledger of paid work, this attempt's calls added to it. */
  ledger: PaidLedger;
}

/**
 * Open the run: the pipeline's lock, then its state (resume the unfinished run, or start a new one), the backfill
 * window kept for a resume, a prepared job's seed for a shard, the start over a stale or missing paid job, and the
 * attempt's `running` line in runs.jsonl — which gets the attempt's outcome when the runtime closes, while the lock
 * is still held (the next run must not find this attempt `running` and call it crashed).
 */
async function openRun(
  rt: PipelineRuntime,
  tally: RunTally,
  hooks: RunHooks,
  restart?: RunRestart,
): Promise<OpenedRun> {
  const { pipeline: p } = rt;
  const { opts, log } = tally;
  // A shard of a prepared job downloads that job and runs under its id (prepare.ts).
  const prepared = opts.shard ? await findPrepared(p, rt.paths) : undefined;
  await rt.lockPipeline();
  const run = await openRunState({
    stateFile: rt.paths.stateFile,
    tmpDir: rt.paths.tmpDir,
    fresh: opts.fresh,
    ...(hooks.runId !== undefined ? { runId: hooks.runId } : prepared && { runId: prepared.id }),
    ...(p.config.resume?.stale_after !== undefined && { staleAfterMs: staleAfterMs(p.config.resume) }),
  });
  const { state, runId, resumed } = run;
  rt.runId = runId;
  tally.identity.run = runId;
  // Before the run says it starts: a backfill refused over an unfinished run leaves that run as it was.
  const window = await backfillOfRun(tally.askedWindow, { state, runId, resumed, log });
  log.info(`${resumed ? 'resuming' : 'starting'} ${p.name} (run ${runId})`);
  if (prepared && opts.shard) await seedPrepared(state, prepared, opts.shard, log);
  await startOver(state, restart ?? staleRestart(run.stale), p.config, log);
  const history = new RunHistory(runHistoryFile(rt.paths.stateDir));
  const started = await history.start(
    {
      run: runId,
      pipeline: p.name,
      resumed,
      startedAt: new Date(tally.startedAt).toISOString(),
      ...(opts.command !== undefined && { command: opts.command }),
      ...(window && { kind: 'backfill' as const, window }),
    },
    // A killed attempt's calls are in its run's ledger: reported on the line that marks it crashed.
    (crashed) =>
      crashed.run === runId
        ? paidByAttempt(state.get(PAID_LEDGER_KEY), crashed.attempt)
        : crashed.run === run.replaced?.runId
          ? paidByAttempt(run.replaced.paid, crashed.attempt)
          : undefined,
  );
  const ledger = PaidLedger.open(state, started.attempt);
  tally.ledger = ledger;
  rt.session.defer(`recording the run in ${history.file}`, (failure) =>
    history.end({ ...attemptRecord(started, tally, failure), paidJobs: ledger.jobs() }),
  );
  return { ...run, ledger, ...(window && { window }) };
}

/** The cursor this run plans from: undefined for a source that keeps none; empty when reset. */
async function cursorOfRun(
  rt: PipelineRuntime,
  tally: RunTally,
  runId: string,
  reset: boolean,
): Promise<ReadonlyMap<string, unknown> | undefined> {
  if (!rt.source.incremental) return undefined;
  if (reset) {
    tally.log.info('cursor reset: the source starts from its initial cursor');
    return new Map();
  }
  const next = (await rt.nextStart({ exceptRun: runId }))!;
  tally.log.info(
    next.checkpoints.size === 0
      ? 'cursor: no checkpoint that every sink committed in an earlier run: the source starts from its initial cursor'
      : `cursor: ${next.checkpoints.size} unit(s) committed by every sink in earlier runs`,
  );
  return next.checkpoints;
}

/** For the progress display: `12 unit(s) planned in shard 1/4`. */
function planLine(planned: readonly WorkUnit[], shard?: { index: number; count: number }): string {
  return `${planned.length} unit(s) planned${shard ? ` in shard ${shard.index}/${shard.count}` : ''}`;
}

/** This attempt's line in the run history, once it ended. */
function attemptRecord(started: RunRecord, tally: RunTally, failure: unknown): RunRecord {
  const summary = tally.summary();
  const { done, skipped, failed, total } = summary.units;
  const warnings = tally.warnings.list();
  return {
    ...started,
    ...outcomeOf(failure),
    units: { committed: done - skipped, skipped, failed, total },
    records: summary.records,
    recordsRead: summary.recordsRead,
    bytes: summary.bytes,
    retries: summary.retries,
    deadLetters: summary.deadLetters,
    deadLetterReasons: summary.deadLetterReasons,
    ...(summary.schemaChanges.length > 0 && { schemaChanges: summary.schemaChanges }),
    ...(summary.checks && { checks: summary.checks }),
    sinks: tally.perSink(),
    ...(warnings.length > 0 && { warnings }),
    // What this attempt paid for (its lines of the run's ledger): the attempts of a run add up to its bill.
    paidCalls: summary.paidCalls,
    recordsCharged: summary.recordsCharged,
    paid: summary.paid,
  };
}

/** A pool smaller than the source's concurrency silently caps it: say so, once, with the fix. */
function warnIfPoolCapsConcurrency(rt: PipelineRuntime): void {
  const pool = rt.pipeline.config.service?.connections as number | undefined;
  const concurrency = rt.source.concurrency;
  if (pool !== undefined && concurrency > pool)
    rt.log.warn(
      `source.concurrency is ${concurrency} but service.connections is ${pool}: at most ${pool} requests will be in flight; raise service.connections or remove it (default 64)`,
    );
}
