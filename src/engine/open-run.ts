/**
 * Stage 1 of an attempt, open the run: the state directory's lock and the run's state (stages/open-state.ts: resume
 * the unfinished run or start a new one), the backfill window kept for a resume, a prepared job's seed for a shard,
 * the start over a stale or missing paid job, and the attempt's `running` line in runs.jsonl. The lock and the
 * line are held by the run session: the line gets the attempt's outcome when the session closes, while the lock is
 * still held, and the lock is released after.
 */
import type { BackfillWindow } from '../core/types.js';
import type { Attempt } from './attempt.js';
import { findPrepared, seedPrepared } from './prepare.js';
import { outcomeOf, paidJobsOf, RunHistory, runHistoryFile, type RunRecord } from './run-history.js';
import type { LockOptions } from './run-lock.js';
import type { RunSession } from './run-session.js';
import { staleAfterMs, staleRestart, startOver } from '../sources/resume-policy.js';
import { backfillOfRun } from './stages/backfill.js';
import { openRunState, type OpenedState } from './stages/open-state.js';

export interface OpenedRun {
  state: OpenedState['state'];
  runId: string;
  resumed: boolean;
  /** With `--fresh`: puts the state back as it was (a refused --fresh leaves the last run resumable). */
  undoFresh?: () => Promise<void>;
  window?: BackfillWindow;
  /** How every lock of the run is taken (the outputs' too). */
  lockOptions: LockOptions;
}

export async function openRun(a: Attempt, session: RunSession): Promise<OpenedRun> {
  const { p, opts, hooks, log, paths } = a;
  // A shard of a prepared job downloads that job and runs under its id (prepare.ts).
  const prepared = opts.shard ? await findPrepared(p, paths) : undefined;
  const lockOptions: LockOptions = {
    command: opts.command ?? 'sluice run',
    log,
    waitMs: opts.waitForLockMs ?? 0,
    signal: session.signal,
  };
  const opened = await openRunState({
    stateFile: paths.stateFile,
    tmpDir: paths.tmpDir,
    lockFile: paths.lockFile,
    lock: lockOptions,
    fresh: opts.fresh,
    ...(hooks.runId !== undefined ? { runId: hooks.runId } : prepared && { runId: prepared.id }),
    ...(p.config.resume?.stale_after !== undefined && { staleAfterMs: staleAfterMs(p.config.resume) }),
  });
  session.hold(`releasing the lock ${opened.lock.file}`, opened.lock, (lock) => lock.release());
  const { state, runId, resumed } = opened;
  a.identity.run = runId;
  // Before the run says it starts: a backfill refused over an unfinished run leaves that run as it was.
  const window = await backfillOfRun(a.askedWindow, { state, runId, resumed, log });
  log.info(`${resumed ? 'resuming' : 'starting'} ${p.name} (run ${runId})`);
  if (prepared && opts.shard) await seedPrepared(state, prepared, opts.shard, log);
  await startOver(state, a.restart ?? staleRestart(opened.stale), p.config, log);
  const history = new RunHistory(runHistoryFile(paths.stateDir));
  const started = await history.start({
    run: runId,
    pipeline: p.name,
    resumed,
    startedAt: new Date(a.startedAt).toISOString(),
    ...(opts.command !== undefined && { command: opts.command }),
    ...(window && { kind: 'backfill' as const, window }),
  });
  const chargedBefore = chargedJobs(state);
  session.defer(`recording the run in ${history.file}`, (failure) =>
    history.end({
      ...attemptRecord(started, a, failure),
      paidJobs: paidJobsOf(state),
      recordsCharged: chargedSince(state, chargedBefore),
    }),
  );
  return {
    state,
    runId,
    resumed,
    lockOptions,
    ...(opened.undoFresh && { undoFresh: opened.undoFresh }),
    ...(window && { window }),
  };
}

/** This attempt's line in the run history, once it ended. */
function attemptRecord(started: RunRecord, a: Attempt, failure: unknown): RunRecord {
  const summary = a.summary();
  const { done, skipped, failed, total } = summary.units;
  const warnings = a.warnings.list();
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
    sinks: a.perSink(),
    ...(warnings.length > 0 && { warnings }),
  };
}

type Charged = Map<string, number>;

/** The paid jobs whose charge is known, by id. */
function chargedJobs(state: OpenedState['state']): Charged {
  return new Map(paidJobsOf(state).flatMap((j) => (j.recordsCharged === undefined ? [] : [[j.id, j.recordsCharged]])));
}

/**
 * Records the service charged while this attempt ran: the charges of the run's paid jobs that became known during it
 * (a filter job is charged its snapshot's size once it is ready, docs/service.md §2.4). A job started by an earlier
 * attempt of the same run and charged then is not counted again, so the attempts of a run add up to its bill.
 */
function chargedSince(state: OpenedState['state'], before: Charged): number {
  let n = 0;
  for (const [id, records] of chargedJobs(state)) if (!before.has(id)) n += records;
  return n;
}
