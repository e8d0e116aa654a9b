/**
 * The pipeline's `resume:` policy: what an unattended rerun does with an unfinished run whose paid job it cannot (or
 * should not) reuse. Applied by the engine (src/operations/run.ts, src/state/run-state.ts); documented in the README.
 *
 * - `stale_after`: an unfinished run older than this is not resumed; a new run starts (a new paid job, when the
 *   source starts one). The saved job may still be valid, but finishing yesterday's snapshot tonight would load
 *   yesterday's data as tonight's. Unset: a run is resumed however old it is.
 * - `on_missing_job`: the service no longer knows or serves the saved job (expired, whatever status code says so; a
 *   restarted emulator without its state).
 *   `fail` (default): the run stops and says so, and nothing is paid until someone decides. `restart`: a new run
 *   starts at once and pays for a new job, logged as a warning, bounded by the source's own guards (records_limit,
 *   max_cost), recorded in the run state (`run:restart`) for the run history. At most one restart per invocation.
 */
import { z } from 'zod';
import type { Logger, StateStore } from '../core/types.js';
import { MissingJobError } from './saved-job.js';

const DURATION = /^(\d+(?:\.\d+)?)\s*(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const resumePolicySchema = z
  .object({
    stale_after: z
      .string()
      .regex(DURATION, 'a duration such as "20h", "90m" or "2d"')
      .optional()
      .describe(
        'An unfinished run older than this is not resumed: a new run starts (and pays for a new job), e.g. "20h" for a nightly job. Unset: resume at any age.',
      ),
    on_missing_job: z
      .enum(['fail', 'restart'])
      .default('fail')
      .describe(
        'When the service no longer knows the snapshot or lookup request an unfinished run saved: `fail` (say so and stop; nothing is paid) or `restart` (start a new run with a new paid job, logged and recorded in the run history).',
      ),
  })
  .strict()
  .describe('What a rerun does with an unfinished run it cannot or should not resume.');

export type ResumePolicy = z.output<typeof resumePolicySchema>;

/** `stale_after` in milliseconds; undefined when unset. */
export function staleAfterMs(policy: Pick<ResumePolicy, 'stale_after'> | undefined): number | undefined {
  const m = policy?.stale_after === undefined ? null : DURATION.exec(policy.stale_after);
  if (!m) return undefined;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/**
 * Why the run in the state is not the run that was resumed, kept in the new run's state (`run:restart`) for the run
 * history: the unfinished run it replaced, and, for a missing job, which one.
 */
export interface RunRestart {
  reason: 'stale_after' | 'missing_job';
  /** The unfinished run that was not resumed. */
  from_run?: string;
  /** e.g. `snapshot snap_…` (missing_job only). */
  missing?: string;
  /** What happened, in words (the warning's first part). */
  detail: string;
  at: string;
}

export const RUN_RESTART_KEY = 'run:restart';

/** The restart `resume.on_missing_job: restart` asks for after `err`; undefined: `err` stands. */
export function restartAfter(err: unknown, policy: ResumePolicy | undefined): RunRestart | undefined {
  if (!(err instanceof MissingJobError) || policy?.on_missing_job !== 'restart') return undefined;
  return {
    reason: 'missing_job',
    ...(err.job.run_id !== undefined && { from_run: err.job.run_id }),
    missing: err.what,
    detail: err.message,
    at: new Date().toISOString(),
  };
}

/** The restart of an unfinished run that `stale_after` did not resume (src/state/run-state.ts). */
export function staleRestart(stale: { runId: string; startedAt: string } | undefined): RunRestart | undefined {
  if (stale === undefined) return undefined;
  return {
    reason: 'stale_after',
    from_run: stale.runId,
    detail: `run ${stale.runId} started ${stale.startedAt} and did not finish`,
    at: new Date().toISOString(),
  };
}

/**
 * Says, at warn, that this new run replaces an unfinished one and may pay for a new job (never silently), and keeps
 * the reason in its state (`run:restart`) for the run history. Nothing when the run is not a restart.
 */
export async function startOver(
  state: StateStore,
  restart: RunRestart | undefined,
  config: { resume?: ResumePolicy | undefined; source: { type: string; [option: string]: unknown } },
  log: Logger,
): Promise<void> {
  if (restart === undefined) return;
  const why =
    restart.reason === 'missing_job'
      ? `${restart.detail}; resume.on_missing_job is restart`
      : `${restart.detail}, longer ago than resume.stale_after (${config.resume?.stale_after}): not resumed`;
  log.warn(`${why}: this new run (${state.get<string>('run:id')}) ${paidWork(config.source)}`);
  await state.set(RUN_RESTART_KEY, restart);
}

/** What the new run pays for, with the source's own bound on it. */
function paidWork(source: { type: string; [option: string]: unknown }): string {
  if (source.type === 'snapshot' && source.filter !== undefined)
    return `starts a new paid filter job${source.records_limit !== undefined ? ` (records_limit ${String(source.records_limit)})` : ' (uncapped: no records_limit)'}`;
  if (source.type === 'deep_lookup' && source.request_id === undefined)
    return `triggers a new paid deep lookup${source.max_cost !== undefined ? ` (max_cost ${String(source.max_cost)})` : source.result_limit !== undefined ? ` (result_limit ${String(source.result_limit)})` : ' (no max_cost set)'}`;
  return 'reads every unit again';
}
