/**
 * How the emulator's dataset endpoints behave where the real service was seen to depart from the most convenient
 * reading of the specification (docs/service.md, "Behaviours and their tests"). The defaults follow the real service;
 * each field is a switch a test turns to get the convenient behaviour back, for a test about that path alone.
 */

export interface DatasetBehaviour {
  /**
   * `some` (default): `GET /datasets/{id}/metadata` answers only for the datasets flagged `metadata` in the
   * catalogue (a minority, as the live service: 31 of 749) and 404s for the others, which exist all the same.
   * `all`: every dataset answers.
   */
  metadata: 'some' | 'all';
  /**
   * `reject` (default): a filter known to match nothing answers 422 "Provided filter did not match any records"
   * and starts no job (known: the records that exist were scanned without a match inside the job's 5-minute budget).
   * `failed_snapshot`: the job starts and ends `failed` with `warning_code: no_records_found` (the live service's
   * other way of saying it).
   */
  noMatch: 'reject' | 'failed_snapshot';
  /**
   * Days a snapshot is kept after its job finished (default 30): later, `/parts` and `/download` answer 400
   * "Snapshot is expired" on the emulated clock. 0: never expires.
   */
  retentionDays: number;
  /**
   * What a job cut off by the 5-minute limit becomes: `canceled` (default; the list endpoint's spelling, with the
   * reason in `failure_reason`) or `failed` (with `error` and `error_code: job_timeout`).
   */
  timeoutStatus: 'canceled' | 'failed';
}

export const DEFAULT_DATASET_BEHAVIOUR: DatasetBehaviour = {
  metadata: 'some',
  noMatch: 'reject',
  retentionDays: 30,
  timeoutStatus: 'canceled',
};

export function datasetBehaviour(overrides: Partial<DatasetBehaviour> | undefined): DatasetBehaviour {
  return { ...DEFAULT_DATASET_BEHAVIOUR, ...overrides };
}
