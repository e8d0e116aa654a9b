/** Saved paid jobs: checkpointed with when and by which run, listed for the run history, and told apart when gone. */
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/client/index.js';
import { MemoryStateStore } from '../../src/engine/state-store.js';
import { MissingJobError, PAID_JOBS_KEY, missingJob, readSavedJob, saveJob } from '../../src/sources/saved-job.js';

const notFound = (status: number): ServiceError =>
  new ServiceError({ method: 'GET', path: '/datasets/snapshots/snap_1', status, serviceMessage: 'snapshot not found' });

describe('saved jobs', () => {
  it('checkpoints a job with its start and run, and lists every paid job of the run in order', async () => {
    const state = new MemoryStateStore();
    await state.set('run:id', '20261123200000-abcdef');
    const job = await saveJob(state, 'snapshot:job:1', 'filter', 'snap_1');
    await saveJob(state, 'deep_lookup:request:2', 'deep_lookup', 'ai_2');
    expect(job).toEqual({ id: 'snap_1', started_at: expect.any(String), run_id: '20261123200000-abcdef' });
    expect(readSavedJob(state, 'snapshot:job:1')).toEqual(job);
    expect(state.get(PAID_JOBS_KEY)).toEqual([
      { kind: 'filter', ...job },
      { kind: 'deep_lookup', id: 'ai_2', started_at: expect.any(String), run_id: '20261123200000-abcdef' },
    ]);
  });

  it('reads the bare id an older state file holds', () => {
    const state = new MemoryStateStore();
    state.data.set('snapshot:job:1', 'snap_old');
    expect(readSavedJob(state, 'snapshot:job:1')).toEqual({ id: 'snap_old' });
    expect(readSavedJob(state, 'snapshot:job:2')).toBeUndefined();
  });

  it('turns only a 404 for the job into a MissingJobError that says when and by which run it started', () => {
    const job = { id: 'snap_1', started_at: '2026-11-23T20:00:00.000Z', run_id: 'r1' };
    const err = missingJob(notFound(404), 'snapshot snap_1', job);
    expect(err).toBeInstanceOf(MissingJobError);
    expect((err as MissingJobError).message).toBe(
      'the service no longer knows snapshot snap_1 (started 2026-11-23T20:00:00.000Z by run r1): GET /datasets/snapshots/snap_1: 404: snapshot not found',
    );
    expect((err as MissingJobError).hint).toMatch(/--fresh.*resume: \{ on_missing_job: restart \}/);
    const busy = notFound(503);
    expect(missingJob(busy, 'snapshot snap_1', job)).toBe(busy);
    expect((missingJob(notFound(404), 'snapshot snap_1', { id: 'snap_1' }) as Error).message).toMatch(
      /^the service no longer knows snapshot snap_1: GET/,
    );
  });
});
