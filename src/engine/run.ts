/**
 * `sluice run`: the engine's stages composed — open state → plan → schedule → run unit → finish — each in its own
 * file under stages/. This file only builds what they share (logger, progress, dead letters, the service, the
 * components) and turns the outcome into a summary.
 *
 * Exactly-once across crashes comes from three rules: (1) paid job ids are checkpointed in the state file before
 * anyone waits on them (stages/open-state.ts keeps that file across a resume); (2) a unit is committed by the sink
 * together with its id, so a rerun skips it (stages/schedule.ts); (3) a unit that failed half-way committed nothing,
 * so reading it again from the start loses and duplicates nothing (stages/run-unit.ts).
 *
 * One run of a pipeline at a time: the state directory is locked first (stages/open-state.ts), then each file
 * sink's output directory (stages/lock-outputs.ts); the locks are released when the run ends, however it ends.
 * An interrupt (`RunOptions.signal`) stops new units at once; units in flight may commit during its grace
 * (`limits.interrupt_grace_s`, engine/interrupt.ts), then their reads are aborted; the run ends in InterruptedError.
 */
import path from 'node:path';
import type { Logger, SinkContext, Source, SourceContext } from '../core/types.js';
import type { ComponentDeps } from '../contracts/component.js';
import { RetryPolicy } from '../core/retry.js';
import { openSinks } from './stages/open-sinks.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { declaredOutput } from '../pipeline/declared-output.js';
import { pipelineLimits } from '../pipeline/limits-schema.js';
import type { RunOptions, RunSummary } from './api.js';
import { buildComponents, refuseShardedReplaceSinks, sinkConfigs } from './components.js';
import { DeadLetterFile } from './dead-letter-file.js';
import { FailureBudget, parseDeadLetterLimit } from './failure-budget.js';
import { withLineage } from './lineage.js';
import { createLogger, withContext } from './logger.js';
import { RunWarnings } from './run-warnings.js';
import { pipelinePaths } from './paths.js';
import { findPrepared, seedPrepared } from './prepare.js';
import { Progress } from './progress.js';
import type { RunHooks } from './run-hooks.js';
import { InterruptGrace, interrupted, interruptSignalOf } from './interrupt.js';
import type { LockOptions, RunLock } from './run-lock.js';
import { outcomeOf, paidJobsOf, RunHistory, runHistoryFile, type RunRecord } from './run-history.js';
import { ServiceConnection } from './service.js';
import { restartAfter, staleAfterMs, staleRestart, startOver, type RunRestart } from '../sources/resume-policy.js';
import { cursorForRun } from './cursor.js';
import { readCursorBase } from './cursor-base.js';
import { closeRun, finishRun } from './stages/finish.js';
import { loadUnit } from './stages/load-unit.js';
import { lockOutputs, releaseLocks } from './stages/lock-outputs.js';
import { refuseFreshDuplicates } from './stages/fresh-guard.js';
import { backfillOfRun, backfillWindow } from './stages/backfill.js';
import { openRunState } from './stages/open-state.js';
import { planLine, planUnits } from './stages/plan.js';
import { runUnit, UNIT_ATTEMPTS } from './stages/run-unit.js';
import type { UnitCounts } from './stages/schedule.js';
import { SinkJudges } from './stages/store-gate.js';
import { buildSummary, CommittedRecords, newRunCounters, runFailure, SchemaChangeLog } from './summary.js';
import { EVOLVE, isEvolve, resolveContract, type SchemaContractOption } from '../schema/contract.js';
import { unstorablePolicy } from '../schema/storable.js';
import { errorText } from './error-text.js';
import { RunWatch } from './run-watch.js';

export { pipelinePaths, type PipelinePaths } from './paths.js';
export { planPipeline } from './plan-pipeline.js';
export { inShard } from './stages/plan.js';
export { formatSummary } from './summary.js';
export type { RunHooks } from './run-hooks.js';

export async function runPipeline(p: LoadedPipeline, opts: RunOptions, hooks: RunHooks = {}): Promise<RunSummary> {
  try {
    return await runAttempt(p, opts, hooks);
  } catch (err) {
    // `resume.on_missing_job: restart`: the saved paid job is gone; one new run (a new paid job) per invocation.
    const restart = hooks.runId === undefined ? restartAfter(err, p.config.resume) : undefined;
    if (restart === undefined) throw err;
    return runAttempt(p, { ...opts, fresh: true }, hooks, restart);
  }
}

async function runAttempt(
  p: LoadedPipeline,
  opts: RunOptions,
  hooks: RunHooks,
  restart?: RunRestart,
): Promise<RunSummary> {
  const startedAt = Date.now();
  const counters = newRunCounters();
  const progress = new Progress(
    { counters, startedAt },
    {
      tty: opts.progress && !opts.quiet && Boolean(process.stderr.isTTY),
      intervalMs: 10_000,
      write: (s) => process.stderr.write(s),
    },
  );
  // The run's identity on every JSON log line (logger.ts withContext); `run` is set once the state is open.
  const shard = opts.shard && `${opts.shard.index}/${opts.shard.count}`;
  const identity = { run: undefined as string | undefined, pipeline: p.name, ...(shard && { shard }) };
  const baseLog = hooks.log ?? createLogger({ format: opts.logFormat, level: opts.quiet ? 'warn' : 'info' });
  // On a terminal, log lines appear above the progress bars rather than through them.
  const warnings = new RunWarnings();
  const log = warnings.wrap(progress.wrap(withContext(baseLog, identity)));
  // Before any state, lock or paid call: no sink can take `replace` from shards (core/sharded-replace.ts).
  refuseShardedReplaceSinks(p.config, opts.shard);
  const askedWindow =
    opts.backfill &&
    backfillWindow(p.config, { ...opts.backfill, allowDuplicates: opts.allowDuplicates }, hooks.registry);
  // A shard keeps its state, temp files and lock apart from the other shards (paths.ts).
  const paths = pipelinePaths(p, opts.shard);
  // A shard of a prepared job downloads that job and runs under its id (prepare.ts).
  const prepared = opts.shard ? await findPrepared(p, paths) : undefined;
  const limits = pipelineLimits(p.config.limits);
  // Aborted when the run is interrupted (planning and waits stop, no new unit starts) and when it ends (anything
  // left waiting stops). Units in flight read under `units` instead, which an interrupt aborts after its grace.
  const abort = new AbortController();
  const interrupt = opts.signal;
  const grace = new InterruptGrace(limits.interruptGraceMs, log);
  const onInterrupt = (): void => {
    grace.start(interruptSignalOf(interrupt!));
    abort.abort();
  };
  if (interrupt?.aborted) abort.abort();
  interrupt?.addEventListener('abort', onInterrupt, { once: true });
  const lockOptions: LockOptions = {
    command: opts.command ?? 'sluice run',
    log,
    waitMs: opts.waitForLockMs ?? 0,
    signal: abort.signal,
  };
  let opened;
  try {
    opened = await openRunState({
      stateFile: paths.stateFile,
      tmpDir: paths.tmpDir,
      lockFile: paths.lockFile,
      lock: lockOptions,
      fresh: opts.fresh,
      ...(hooks.runId !== undefined ? { runId: hooks.runId } : prepared && { runId: prepared.id }),
      ...(p.config.resume?.stale_after !== undefined && { staleAfterMs: staleAfterMs(p.config.resume) }),
    });
  } catch (err) {
    interrupt?.removeEventListener('abort', onInterrupt);
    grace.end();
    // Interrupted while waiting for the lock (`--wait`).
    throw interrupt?.aborted ? interrupted(interrupt, { total: 0, done: 0, skipped: 0, failed: 0 }) : err;
  }
  const { state, runId, resumed, lock } = opened;
  identity.run = runId;
  // Until the run's own try/finally below owns the lock, anything that throws must release it: the next run would
  // otherwise find a lock whose holder is alive (this process, in tests) or 'take over' one from a run that just failed.
  let lockHandedOver = false;
  try {
    let outputLocks: RunLock[] = [];
    // Before the run says it starts: a backfill refused over an unfinished run leaves that run as it was.
    const window = await backfillOfRun(askedWindow, { state, runId, resumed, log });
    log.info(`${resumed ? 'resuming' : 'starting'} ${p.name} (run ${runId})`);
    if (prepared && opts.shard) await seedPrepared(state, prepared, opts.shard, log);
    await startOver(state, restart ?? staleRestart(opened.stale), p.config, log);
    const history = new RunHistory(runHistoryFile(paths.stateDir));
    const attempt = await history
      .start({
        run: runId,
        pipeline: p.name,
        resumed,
        startedAt: new Date(startedAt).toISOString(),
        ...(opts.command !== undefined && { command: opts.command }),
        ...(window && { kind: 'backfill' as const, window }),
      })
      .catch(async (err: unknown) => {
        await releaseLocks([lock], log);
        throw err;
      });

    const dlq = new DeadLetterFile(paths.deadLetterFile, runId);
    await dlq.open();
    const budget = new FailureBudget(parseDeadLetterLimit(p.config.max_dead_letters as number | string | undefined));
    const deadLetter = (d: Parameters<DeadLetterFile['write']>[0]): void => {
      counters.deadLetters++;
      budget.note({ ...d, run: runId });
      dlq.write(d);
    };
    let budgetSpent = false;
    const overBudget = (): boolean => {
      if (!budgetSpent && budget.exceeded(counters.records)) {
        budgetSpent = true;
        log.warn(
          `${budget.count} records dead-lettered, over max_dead_letters: no new unit starts; units in flight finish`,
        );
      }
      return budgetSpent;
    };
    // Notifications, metrics, traces and checks (src/observe/), through one object the run tells what happens.
    const watch = await RunWatch.start(p.config, { baseDir: p.baseDir, log });
    const service = new ServiceConnection(p.config.service, p.baseDir, log, counters, {
      // One embedded emulator account for the prepare step and every shard.
      emulatorStateFile: path.join(paths.rootStateDir, 'emulator.json'),
      ...watch.serviceCalls(),
      limits,
    });
    hooks.onService?.(service);
    const deps: ComponentDeps = {
      log,
      baseDir: p.baseDir,
      client: () => service.get(),
      ...(opts.shard && { shard: opts.shard }),
    };
    const built = buildComponents(p.config, deps, hooks.registry);
    if (hooks.source) built.source = hooks.source;
    const source = built.source;
    const sinkConfigList = sinkConfigs(p.config);
    const sinks = built.sinks.map((s, i) =>
      sinkConfigList[i]?.lineage === true ? withLineage(s.sink, runId) : s.sink,
    );
    const contracts = new Map(
      sinks.map((s, i) => [
        s,
        resolveContract(p.config.schema_contract, sinkConfigList[i]?.schema_contract as SchemaContractOption),
      ]),
    );
    const judges = new SinkJudges((s) => unstorablePolicy(sinkConfigList[sinks.indexOf(s)]));
    const schemaChanges = new SchemaChangeLog();
    const committedRecords = new CommittedRecords();
    warnIfPoolCapsConcurrency(p, source, log);
    const sctx: SourceContext = {
      signal: abort.signal,
      limits,
      log,
      state,
      counters,
      deadLetter,
      baseDir: p.baseDir,
      now: () => service.now(),
      dryRun: false,
      sharded: opts.shard !== undefined,
      ...(window && { backfill: window }),
    };
    const sinkCtx: SinkContext = {
      log,
      deadLetter,
      baseDir: p.baseDir,
      pipeline: p.name,
      fresh: !resumed,
      runId,
      declared: declaredOutput(p.config.transforms ?? [], hooks.registry),
    };
    const retry = new RetryPolicy({
      attempts: UNIT_ATTEMPTS,
      baseMs: p.config.service?.retry?.base_delay_ms ?? 500,
      maxMs: p.config.service?.retry?.max_delay_ms ?? 30_000,
    });

    let units: UnitCounts = { total: 0, done: 0, skipped: 0, failed: 0 };
    let committedPerSink = sinks.map(() => 0);
    watch.started({
      identity: { ...identity, run: runId },
      resumed,
      startedAt,
      sinks,
      counters,
      progress: progress.state,
    });
    let failure: unknown;
    let summary: RunSummary | undefined;
    try {
      lockHandedOver = true;
      // A contract the sink cannot judge against (it cannot tell its columns) must not pass for enforced.
      for (const [s, c] of contracts)
        if (!isEvolve(c) && !s.currentColumns)
          throw new SluiceError(`${s.describe()} cannot apply a schema_contract: it does not report its columns`, {
            hint: 'remove `schema_contract` from this sink (and from the pipeline, or set it per sink)',
            exitCode: EXIT_CODES.config,
          });
      outputLocks = await lockOutputs(sinks, p.baseDir, lockOptions);
      await openSinks(sinks, sinkCtx, { retry, log, counters, signal: abort.signal });
      // The user's --fresh (not a restart for a missing job, not a replay), before anything is paid or written.
      if (opts.fresh && restart === undefined && hooks.runId === undefined && opts.allowDuplicates !== true)
        await refuseFreshDuplicates(
          sinks.map((s, i) => ({ sink: s, write: sinkConfigList[i]?.write })),
          runId,
        ).catch(async (err: unknown) => {
          // The unfinished run it would have replaced stays resumable.
          await opened.undoFresh?.();
          throw err;
        });
      // A restart for a missing paid job (`restart`) starts a new run, not a new cursor: only the user resets it.
      const reset = opts.resetCursor === true || (opts.fresh && restart === undefined);
      const base = await readCursorBase(paths.rootStateDir);
      const cursor = await cursorForRun(source, sinks, { reset, runId, log, base });
      if (cursor !== undefined) sctx.checkpoints = cursor;
      if (opts.progress && !opts.quiet) progress.start();
      const planned = await planUnits(source, sctx, opts.shard);
      progress.state.plan = planLine(planned, opts.shard);
      const scheduled = await watch.schedule({
        runId,
        source,
        sctx,
        sinks,
        planned,
        ...(opts.shard && { shard: opts.shard }),
        log,
        progress: progress.state,
        ...(hooks.afterCommit && { afterCommit: hooks.afterCommit }),
        halted: overBudget,
        runUnit: (u, sinkUnit, pending) =>
          runUnit(u, sinkUnit, pending, {
            retry,
            log,
            counters,
            signal: abort.signal,
            cancel: grace.units,
            // A deadline bounds what the network sends; a local file takes as long as it takes.
            ...(!built.offline && { timeoutMs: limits.unitTimeoutMs }),
            source,
            attempt: (unit, scoped, todo, read, signal) =>
              loadUnit(unit, scoped, todo, {
                source: read.source,
                commit: read.commit,
                sctx: { ...sctx, signal },
                log,
                chain: { transforms: built.transforms, log, deadLetter, counters },
                ...(hooks.firstTransform && { firstTransform: hooks.firstTransform }),
                rawPath: built.transforms.length === 0 && p.config.fast_path !== false,
                tmpDir: paths.tmpDir,
                onNativeLoad: () => void counters.nativeLoads++,
                writing: {
                  contractOf: (s) => contracts.get(s) ?? EVOLVE,
                  deadLetter,
                  judges,
                  log,
                  onCommit: (s, r) => {
                    schemaChanges.note(s.describe(), r.schemaChanges);
                    committedRecords.note(scoped.id, s, r);
                    watch.committed(u, s, r);
                  },
                },
                onNativeFallback: (unit, refusals) => {
                  counters.nativeFallbacks++;
                  log.warn(
                    `unit ${unit.id}: ${refusals.map((r) => `${r.sink} refused the file (${r.reason})`).join('; ')}; decoding it in JS`,
                  );
                },
              }),
          }),
      });
      units = scheduled.units;
      committedPerSink = scheduled.committedPerSink;
      // Not complete: the next run resumes, skipping what was committed. Units in flight were let finish their
      // commit or abandoned with nothing of them committed (stages/schedule.ts).
      if (interrupt?.aborted) throw interrupted(interrupt, units);
      // Over budget mid-run, the run stopped for it: that, not a unit that failed meanwhile, is the cause.
      if (overBudget()) throw budget.error(counters.records);
      if (scheduled.failure !== undefined) throw scheduled.failure;
      // Every unit was read: a percentage budget is judged on the final counts, however few records.
      if (budget.exceeded(counters.records, true)) throw budget.error(counters.records);
      await finishRun(sinks, state);
      // The data stays committed whatever the checks find.
      await watch.check(sinkConfigList as object[], { log, ...(sctx.now && { now: sctx.now }) });
    } catch (err) {
      // Whatever an aborted read threw, the cause is the interrupt.
      failure = interrupt?.aborted ? interrupted(interrupt, units) : err;
    } finally {
      interrupt?.removeEventListener('abort', onInterrupt);
      progress.stop();
      abort.abort();
      grace.end();
      const closeFailure = await closeRun({ source, sinks, deadLetters: dlq, service, log });
      failure ??= closeFailure;
      summary = {
        ...identity,
        run: runId,
        ...buildSummary(
          p.name,
          units,
          counters,
          startedAt,
          sinks.map((s) => s.describe()),
          budget.topReasons(),
          schemaChanges.list(),
          committedRecords.total,
        ),
        ...(watch.checks.length > 0 && { checks: watch.checks }),
      };
      // Written while the lock is held: the next run must not find this attempt `running` and call it crashed.
      await history
        .end({
          ...attemptRecord(
            attempt,
            summary,
            failure,
            paidJobsOf(state),
            sinks.map((s, i) => ({
              sink: s.describe(),
              committedUnits: committedPerSink[i] ?? 0,
              records: committedRecords.of(s),
            })),
          ),
          ...(warnings.list().length > 0 && { warnings: warnings.list() }),
        })
        .catch((e: unknown) => log.warn(`recording the run in ${history.file}: ${errorText(e)}`));
      // Released after the sinks closed (a DuckDB file is checkpointed on close): the next run finds them settled.
      await releaseLocks([lock, ...outputLocks], log);
      await watch.ended(failure, summary);
    }

    if (failure !== undefined) throw runFailure(failure, summary);
    return summary;
  } finally {
    if (!lockHandedOver) {
      interrupt?.removeEventListener('abort', onInterrupt);
      grace.end();
      await releaseLocks([lock], log);
    }
  }
}

/** This attempt's line in the run history, once it ended. */
function attemptRecord(
  attempt: RunRecord,
  summary: RunSummary,
  failure: unknown,
  paidJobs: RunRecord['paidJobs'],
  sinks: RunRecord['sinks'],
): RunRecord {
  const { done, skipped, failed, total } = summary.units;
  return {
    ...attempt,
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
    paidJobs,
    sinks,
  };
}

/** A pool smaller than the source's concurrency silently caps it: say so, once, with the fix. */
function warnIfPoolCapsConcurrency(p: LoadedPipeline, source: Source, log: Logger): void {
  const pool = p.config.service?.connections as number | undefined;
  const concurrency = source.concurrency;
  if (pool !== undefined && concurrency !== undefined && concurrency > pool)
    log.warn(
      `source.concurrency is ${concurrency} but service.connections is ${pool}: at most ${pool} requests will be in flight; raise service.connections or remove it (default 64)`,
    );
}
