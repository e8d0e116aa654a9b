/**
 * `sluice run`: one attempt as its stages — open the run (stage 1: lock, state, history line) → wire what units share
 * → open the outputs → plan (stage 2) → schedule (stage 3) each unit: read, store gate, load, commit (stage 4) →
 * finish (stage 5) — each in its own file. What the attempt holds is owned by one run session (run-session.ts),
 * released in reverse order however the attempt ends; what the stages learn is handed back to the attempt's tally
 * (attempt.ts), from which the summary and the run history are drawn.
 *
 * Exactly-once across crashes comes from three rules: (1) paid job ids are checkpointed in the state file before
 * anyone waits on them (stages/open-state.ts keeps that file across a resume); (2) a unit is committed by the sink
 * together with its id, so a rerun skips it (stages/schedule.ts); (3) a unit that failed half-way committed nothing,
 * so reading it again from the start loses and duplicates nothing (stages/run-unit.ts).
 *
 * One run of a pipeline at a time: the state directory is locked first (stages/open-state.ts), then each file
 * sink's output directory (stages/lock-outputs.ts). An interrupt (`RunOptions.signal`) stops new units at once;
 * units in flight may commit during its grace (`limits.interrupt_grace_s`, engine/interrupt.ts), then their reads are
 * aborted; the run ends in InterruptedError.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { WorkUnit } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { isEvolve } from '../schema/contract.js';
import { restartAfter, type RunRestart } from '../sources/resume-policy.js';
import type { RunOptions, RunSummary } from './api.js';
import { Attempt } from './attempt.js';
import { readCursorBase } from './cursor-base.js';
import { cursorForRun } from './cursor.js';
import { openRun, type OpenedRun } from './open-run.js';
import type { RunHooks } from './run-hooks.js';
import { RunSession } from './run-session.js';
import { finishRun } from './stages/finish.js';
import { refuseFreshDuplicates } from './stages/fresh-guard.js';
import { lockOutputs } from './stages/lock-outputs.js';
import { openSinks } from './stages/open-sinks.js';
import { planLine, planUnits } from './stages/plan.js';
import { errorText } from './error-text.js';
import { runFailure } from './summary.js';
import { scheduleOf, wireRun, type WiredRun } from './wire-run.js';

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
  const a = new Attempt(p, opts, hooks, restart);
  const session = new RunSession(a.log, opts.signal, a.limits.interruptGraceMs);
  let failure: unknown;
  let recorded = false;
  try {
    const run = await openRun(a, session);
    recorded = true;
    const wired = await wireRun(a, session, run);
    await openOutputs(a, session, run, wired);
    const planned = await plan(a, session, run, wired);
    const scheduled = await wired.watch.schedule(scheduleOf(a, session, wired, run.runId, planned));
    a.scheduled(scheduled, session);
    await finishRun(wired.sinks, run.state);
    // The data stays committed whatever the checks find.
    await wired.watch.check(wired.sinkConfigs, { log: a.log, ...(wired.sctx.now && { now: wired.sctx.now }) });
  } catch (err) {
    // Whatever an aborted read (or a wait for the lock) threw, the cause is the interrupt.
    failure = session.interrupted ? session.interruption(a.units) : err;
  }
  failure = await session.close(failure);
  // Refused before the attempt was recorded (a lock held, a backfill over an unfinished run): nothing to summarise.
  if (!recorded) throw failure;
  const summary = a.summary();
  await a.watch?.ended(failure, summary);
  if (failure !== undefined) throw runFailure(failure, summary);
  return summary;
}

/** The outputs' locks, then the sinks opened; a --fresh run into outputs it would duplicate stops here. */
async function openOutputs(a: Attempt, session: RunSession, run: OpenedRun, w: WiredRun): Promise<void> {
  // A contract the sink cannot judge against (it cannot tell its columns) must not pass for enforced.
  for (const [s, c] of w.contracts)
    if (!isEvolve(c) && !s.currentColumns)
      throw new SluiceError(`${s.describe()} cannot apply a schema_contract: it does not report its columns`, {
        hint: 'remove `schema_contract` from this sink (and from the pipeline, or set it per sink)',
        exitCode: EXIT_CODES.config,
      });
  for (const lock of await lockOutputs(w.sinks, a.p.baseDir, run.lockOptions))
    session.hold(`releasing the lock ${lock.file}`, lock, (l) => l.release());
  // Released before the outputs' locks: a DuckDB file is checkpointed on close, and the next run finds it settled.
  session.defer('closing sink', async () => {
    for (const s of w.sinks) await s.close().catch((e: unknown) => a.log.warn(`closing sink: ${errorText(e)}`));
  });
  await openSinks(w.sinks, w.sinkCtx, { retry: w.retry, log: a.log, counters: a.counters, signal: session.signal });
  // Before anything is paid or written.
  if (a.userFresh && a.opts.allowDuplicates !== true)
    await refuseFreshDuplicates(
      w.sinks.map((s, i) => ({ sink: s, write: w.sinkConfigs[i]?.write })),
      run.runId,
    ).catch(async (err: unknown) => {
      // The unfinished run it would have replaced stays resumable.
      await run.undoFresh?.();
      throw err;
    });
}

/** Stage 2: the cursor the sinks committed (or a reset), then the source's units for this run (or shard). */
async function plan(a: Attempt, session: RunSession, run: OpenedRun, w: WiredRun): Promise<WorkUnit[]> {
  const { opts } = a;
  // A restart for a missing paid job starts a new run, not a new cursor: only the user resets it.
  const reset = opts.resetCursor === true || (opts.fresh && a.restart === undefined);
  const base = await readCursorBase(a.paths.rootStateDir);
  const cursor = await cursorForRun(w.source, w.sinks, { reset, runId: run.runId, log: a.log, base });
  if (cursor !== undefined) w.sctx.checkpoints = cursor;
  if (opts.progress && !opts.quiet) session.hold('progress', a.progress, (p) => p.stop()).start();
  const planned = await planUnits(w.source, w.sctx, opts.shard);
  a.progress.state.plan = planLine(planned, opts.shard);
  return planned;
}
