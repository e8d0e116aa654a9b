/** Saved paid jobs: checkpointed with when and by which run, listed for the run history, and told apart when gone. */
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/client/index.js';
import { PaidLedger } from '../../src/state/paid-ledger.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { MissingJobError, jobGone, missingJob, readSavedJob, saveJob } from '../../src/sources/saved-job.js';
import { unknownId } from '../../src/sources/unknown-id.js';

const notFound = (status: number): ServiceError =>
  new ServiceError({ method: 'GET', path: '/datasets/snapshots/snap_1', status, serviceMessage: 'snapshot not found' });

describe('saved jobs', () => {
  it('checkpoints a job with its start and run, and records every paid job of the run in its ledger, in order', async () => {
    const state = new MemoryStateStore();
    await state.set('run:id', '20261123200000-abcdef');
    const ctx = { state, paid: PaidLedger.open(state, 1) };
    const job = await saveJob(ctx, 'snapshot:job:1', { kind: 'filter', for: 'filter job' }, 'snap_1');
    await saveJob(ctx, 'deep_lookup:request:2', { kind: 'trigger', for: 'deep lookup request' }, 'ai_2');
    expect(job).toEqual({ id: 'snap_1', started_at: expect.any(String), run_id: '20261123200000-abcdef' });
    expect(readSavedJob(state, 'snapshot:job:1')).toEqual(job);
    expect(ctx.paid.jobs()).toEqual([
      { kind: 'filter', id: 'snap_1', started_at: job.started_at },
      { kind: 'deep_lookup', id: 'ai_2', started_at: expect.any(String) },
    ]);
    expect(ctx.paid.figures().paidCalls).toBe(2);
  });

  it('reads the bare id an older state file holds', () => {
    const state = new MemoryStateStore();
    state.data.set('snapshot:job:1', 'snap_old');
    expect(readSavedJob(state, 'snapshot:job:1')).toEqual({ id: 'snap_old' });
    expect(readSavedJob(state, 'snapshot:job:2')).toBeUndefined();
  });

  it('a job gone is gone whatever status says so: 404, 410, or a refusal saying expired or not found', () => {
    const answer = (status: number, serviceMessage: string, path = '/datasets/snapshots/snap_1/parts'): ServiceError =>
      new ServiceError({ method: 'GET', path, status, serviceMessage });
    const job = { id: 'snap_1', started_at: '2026-11-23T20:00:00.000Z', run_id: 'r1' };
    const expired = missingJob(answer(400, 'Snapshot is expired'), 'snapshot snap_1', job);
    expect(expired).toBeInstanceOf(MissingJobError);
    expect((expired as Error).message).toBe(
      'snapshot snap_1 has expired (started 2026-11-23T20:00:00.000Z by run r1): GET /datasets/snapshots/snap_1/parts: 400: Snapshot is expired',
    );
    for (const gone of [answer(410, 'Gone'), answer(400, 'Snapshot does not exist'), answer(404, 'Not found')])
      expect(jobGone(gone)).toBe(true);
    // Not gone: not ready yet, a request the service disliked, a busy or failing service.
    for (const other of [
      answer(400, 'Snapshot not ready'),
      answer(400, '"batch_size" must be greater than or equal to 1000'),
      answer(429, 'Too many requests'),
      answer(503, 'Snapshot is expired'),
    ])
      expect(jobGone(other)).toBe(false);
    // A configured id that expired names its option.
    const configured = unknownId(answer(400, 'Snapshot is expired'), 'snapshot snap_1', 'source.snapshot_id', 'x');
    expect((configured as Error).message).toMatch(/^snapshot snap_1 has expired \(GET .*: 400: Snapshot is expired\)$/);
  });

  it('turns a 404 for the job into a MissingJobError that says when and by which run it started', () => {
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
