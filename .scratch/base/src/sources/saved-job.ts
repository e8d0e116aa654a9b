/**
 * Paid jobs a run started and checkpointed (a filter job's snapshot, a deep lookup request), and what a rerun says
 * when the service no longer knows one: it expired, or (base_url `emulator`) the emulator that made it is gone. The
 * rerun cannot wait on it, and must not start another paid job on its own; the engine's `resume.on_missing_job`
 * decides (stages in src/engine/run.ts).
 */
import { ServiceError } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import type { StateStore } from '../core/types.js';

/** A checkpointed paid job. Older state files hold only the id (a string). */
export interface SavedJob {
  id: string;
  /** When the service answered with the id (ISO 8601, local clock). */
  started_at?: string;
  /** The run that started it. */
  run_id?: string;
}

/** A paid job started in this run, as the run history lists it (`run:paid_jobs` in the run state). */
export interface PaidJob extends SavedJob {
  /** `filter` (a snapshot) or `deep_lookup` (a lookup request). */
  kind: 'filter' | 'deep_lookup';
}

/** The run state key listing the paid jobs this run started, in order. */
export const PAID_JOBS_KEY = 'run:paid_jobs';

export function readSavedJob(state: StateStore, key: string): SavedJob | undefined {
  const saved = state.get<string | SavedJob>(key);
  if (saved === undefined) return undefined;
  return typeof saved === 'string' ? { id: saved } : saved;
}

/**
 * Checkpoints a job the service just started (before anyone waits on it: a rerun then reuses it instead of paying
 * again), and adds it to the run's list of paid jobs.
 */
export async function saveJob(state: StateStore, key: string, kind: PaidJob['kind'], id: string): Promise<SavedJob> {
  const runId = state.get<string>('run:id');
  const job: SavedJob = { id, started_at: new Date().toISOString(), ...(runId !== undefined && { run_id: runId }) };
  await state.set(key, job);
  await state.set(PAID_JOBS_KEY, [...(state.get<PaidJob[]>(PAID_JOBS_KEY) ?? []), { kind, ...job }]);
  return job;
}

/** A checkpointed job the service answers 404 for. */
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
    super(`the service no longer knows ${what}${origin.length > 0 ? ` (${origin.join(' ')})` : ''}: ${cause.message}`, {
      hint:
        'its results cannot be downloaded any more: run again with --fresh to start a new paid job, or set ' +
        '`resume: { on_missing_job: restart }` in the pipeline so unattended runs do that themselves (logged, and ' +
        'bounded by the source’s records_limit / max_cost)',
      cause,
    });
    this.name = 'MissingJobError';
  }
}

/** `err` as a MissingJobError when the service answered 404 for the saved job; anything else unchanged. */
export function missingJob(err: unknown, what: string, job: SavedJob): unknown {
  if (err instanceof ServiceError && err.status === 404) return new MissingJobError(what, job, err);
  return err;
}
