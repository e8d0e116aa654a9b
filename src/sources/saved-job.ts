/**
 * Paid jobs a run started and checkpointed (a filter job's snapshot, a deep lookup request), and what a rerun says
 * when the service no longer knows one: it expired, or (base_url `emulator`) the emulator that made it is gone. The
 * rerun cannot wait on it, and must not start another paid job on its own; `resume.on_missing_job` decides
 * (operations/run.ts).
 */
import { ServiceError } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import type { PaidKind } from '../core/paid-work.js';
import type { SourceContext, StateStore } from '../core/types.js';

/** A checkpointed paid job. Older state files hold only the id (a string). */
export interface SavedJob {
  id: string;
  /** When the service answered with the id (ISO 8601, local clock). */
  started_at?: string;
  /** The run that started it. */
  run_id?: string;
}

export function readSavedJob(state: StateStore, key: string): SavedJob | undefined {
  const saved = state.get<string | SavedJob>(key);
  if (saved === undefined) return undefined;
  return typeof saved === 'string' ? { id: saved } : saved;
}

/**
 * Checkpoints a job the service just started (before anyone waits on it: a rerun then reuses it instead of paying
 * again), and records it in the run's ledger of paid work (`for`: what it is for, e.g. `filter job`).
 */
export async function saveJob(
  ctx: Pick<SourceContext, 'state' | 'paid'>,
  key: string,
  paid: { kind: PaidKind; for: string },
  id: string,
): Promise<SavedJob> {
  const runId = ctx.state.get<string>('run:id');
  const job: SavedJob = { id, started_at: new Date().toISOString(), ...(runId !== undefined && { run_id: runId }) };
  // The ledger first: a kill between the two leaves a job the rerun adopts (a lost answer), recorded once.
  await ctx.paid.paid({ ...paid, job: id, startedAt: job.started_at! });
  await ctx.state.set(key, job);
  return job;
}

/**
 * The service's answer says the job is gone, whatever status it chose: 404 or 410, or any other refusal (4xx) whose
 * words say it expired or is not found — snapshots answer 400 "Snapshot is expired" once their 30 days have passed
 * (docs/service.md §1.4), and a 404's body differs per endpoint.
 */
export function jobGone(err: unknown): err is ServiceError {
  if (!(err instanceof ServiceError) || err.transient || err.status < 400 || err.status >= 500) return false;
  if (err.status === 404 || err.status === 410) return true;
  return isExpired(err) || /\bnot found\b|does not exist|no longer exists/i.test(err.serviceMessage);
}

/** The answer says the job's results expired (the service keeps them a limited time). */
export function isExpired(err: ServiceError): boolean {
  return /\bexpired\b/i.test(err.serviceMessage);
}

/** A checkpointed job the service no longer knows, or no longer serves (expired). */
export class MissingJobError extends SluiceError {
  constructor(
    /** e.g. `snapshot snap_…`, `deep lookup request ai_…`. */
    readonly what: string,
    readonly job: SavedJob,
    cause: ServiceError,
  ) {
    const origin = [
      job.started_at !== undefined && `started ${job.started_at}`,
      job.run_id !== undefined && `by run ${job.run_id}`,
    ].filter(Boolean);
    const state = isExpired(cause) ? `${what} has expired` : `the service no longer knows ${what}`;
    super(`${state}${origin.length > 0 ? ` (${origin.join(' ')})` : ''}: ${cause.message}`, {
      hint:
        'its results cannot be downloaded any more: run again with --fresh to start a new paid job, or set ' +
        '`resume: { on_missing_job: restart }` in the pipeline so unattended runs do that themselves (logged, and ' +
        'bounded by the source’s records_limit / max_cost)',
      cause,
    });
    this.name = 'MissingJobError';
  }
}

/** `err` as a MissingJobError when the service's answer says the saved job is gone (`jobGone`); else unchanged. */
export function missingJob(err: unknown, what: string, job: SavedJob): unknown {
  if (jobGone(err)) return new MissingJobError(what, job, err);
  return err;
}
