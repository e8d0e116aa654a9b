/** The `resume:` policy: its config, and when a failed resume becomes a restart. */
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/client/index.js';
import { SluiceError } from '../../src/core/errors.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import {
  RUN_RESTART_KEY,
  restartAfter,
  resumePolicySchema,
  staleAfterMs,
  staleRestart,
  startOver,
} from '../../src/sources/resume-policy.js';
import { MissingJobError } from '../../src/sources/saved-job.js';

const missing = new MissingJobError(
  'snapshot snap_1',
  { id: 'snap_1', run_id: 'r1' },
  new ServiceError({ method: 'GET', path: '/x', status: 404, serviceMessage: 'snapshot not found' }),
);

describe('resume policy', () => {
  it('defaults to fail and reads stale_after durations', () => {
    expect(resumePolicySchema.parse({})).toEqual({ on_missing_job: 'fail' });
    expect(staleAfterMs({ stale_after: '20h' })).toBe(20 * 3_600_000);
    expect(staleAfterMs({ stale_after: '90m' })).toBe(90 * 60_000);
    expect(staleAfterMs({ stale_after: '1.5d' })).toBe(36 * 3_600_000);
    expect(staleAfterMs(undefined)).toBeUndefined();
    expect(resumePolicySchema.safeParse({ stale_after: '20' }).success).toBe(false);
    expect(resumePolicySchema.safeParse({ on_missing_job: 'retry' }).success).toBe(false);
  });

  it('restarts only after a missing job, and only when the policy says restart', () => {
    expect(restartAfter(missing, { on_missing_job: 'fail' })).toBeUndefined();
    expect(restartAfter(missing, undefined)).toBeUndefined();
    expect(restartAfter(new SluiceError('other'), { on_missing_job: 'restart' })).toBeUndefined();
    expect(restartAfter(missing, { on_missing_job: 'restart' })).toMatchObject({
      reason: 'missing_job',
      from_run: 'r1',
      missing: 'snapshot snap_1',
    });
  });

  it('logs a restart at warn with the new paid job and its bound, and records it for the run history', async () => {
    const state = new MemoryStateStore();
    await state.set('run:id', 'r2');
    const warnings: string[] = [];
    const log = {
      info: () => undefined,
      warn: (m: string) => warnings.push(m),
      error: () => undefined,
      debug: () => undefined,
    };
    const restart = staleRestart({ runId: 'r1', startedAt: '2026-11-20T03:00:00.000Z' })!;
    await startOver(
      state,
      restart,
      {
        resume: { stale_after: '20h', on_missing_job: 'fail' },
        source: { type: 'snapshot', filter: {}, records_limit: 500 },
      },
      log as never,
    );
    expect(warnings).toEqual([
      'run r1 started 2026-11-20T03:00:00.000Z and did not finish, longer ago than resume.stale_after (20h): not resumed: this new run (r2) starts a new paid filter job (records_limit 500)',
    ]);
    expect(state.get(RUN_RESTART_KEY)).toEqual(restart);
    await startOver(state, undefined, { source: { type: 'snapshot' } }, log as never);
    expect(warnings).toHaveLength(1);
  });
});
