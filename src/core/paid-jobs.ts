/**
 * The paid jobs a run started, as its state lists them: written by the sources as each job starts
 * (sources/saved-job.ts), read by the run history. In core because both sides read the same record.
 */

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
  /** Records the service charged for it, once known (the run history's `recordsCharged`). */
  records_charged?: number;
}

/** The run state key listing the paid jobs this run started, in order. */
export const PAID_JOBS_KEY = 'run:paid_jobs';

/** A paid job as the run history lists it. */
export interface PaidJobRecord {
  kind: string;
  id: string;
  started_at?: string;
  /** Records the service charged for it, once known (a filter job: its snapshot's size once ready). */
  recordsCharged?: number;
}

/** The paid jobs a run's state lists. */
export function paidJobsOf(state: { get<T>(key: string): T | undefined }): PaidJobRecord[] {
  const jobs = state.get<PaidJob[]>(PAID_JOBS_KEY) ?? [];
  return jobs.map((j) => ({
    kind: j.kind,
    id: j.id,
    ...(j.started_at !== undefined && { started_at: j.started_at }),
    ...(j.records_charged !== undefined && { recordsCharged: j.records_charged }),
  }));
}
