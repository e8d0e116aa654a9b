/**
 * The run's ledger of paid work, over the run's real state file: what each attempt paid for, a call paid again
 * before its unit committed counted as retried (across a kill too), a job paid and charged once, and what a killed
 * attempt paid readable by the attempt after it.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describePaid } from '../../src/core/paid-work.js';
import { PAID_LEDGER_KEY, PaidLedger, paidByAttempt } from '../../src/state/paid-ledger.js';
import { FileStateStore, MemoryStateStore } from '../../src/state/state-store.js';
import { tempDir } from '../support/in-memory.js';

const page = (key: string) => ({ kind: 'request' as const, for: 'review page', key });

describe('PaidLedger', () => {
  it('counts each billed call on the line of its kind and purpose, in the attempt that paid it', async () => {
    const ledger = PaidLedger.open(new MemoryStateStore(), 1);
    await ledger.paid(page('reviews:a:start:0'));
    await ledger.paid(page('reviews:b:start:0'));
    await ledger.paid({ kind: 'request', for: 'from_serp map search page', key: 'from_serp:q' });
    await ledger.wasted({ kind: 'request', for: 'review page' });
    expect(ledger.figures()).toEqual({
      paidCalls: 3,
      recordsCharged: 0,
      paid: [
        { kind: 'request', for: 'review page', calls: 2, retried: 0, wasted: 1 },
        { kind: 'request', for: 'from_serp map search page', calls: 1, retried: 0, wasted: 0 },
      ],
    });
    expect(describePaid(ledger.figures())).toBe('3 calls (review page ×2, from_serp map search page ×1; 1 wasted)');
  });

  it('a page paid again before its unit committed is a retry, after a kill too; one settled is not', async () => {
    const file = path.join(tempDir(), 'state.json');
    const first = PaidLedger.open(await FileStateStore.open(file), 1);
    await first.paid(page('p1'));
    await first.paid(page('p2'));
    first.settled('p1');
    await first.paid(page('p1b'));
    // Killed here: p2 and p1b were paid, their units not committed. The next attempt reads the same state.
    const resumed = PaidLedger.open(await FileStateStore.open(file), 2);
    await resumed.paid(page('p2'));
    await resumed.paid(page('p1b'));
    await resumed.paid(page('p3'));
    expect(resumed.figures().paid).toEqual([{ kind: 'request', for: 'review page', calls: 3, retried: 2, wasted: 0 }]);
    // The killed attempt's lines are still its own: what its crashed line reports.
    expect(resumed.figures(1).paid).toEqual([{ kind: 'request', for: 'review page', calls: 3, retried: 0, wasted: 0 }]);
    const stored = (await FileStateStore.open(file)).get(PAID_LEDGER_KEY);
    expect(paidByAttempt(stored, 1)).toEqual(resumed.figures(1));
    expect(paidByAttempt(stored, 2)).toEqual(resumed.figures(2));
    expect(paidByAttempt(undefined, 1)).toEqual({ paidCalls: 0, recordsCharged: 0, paid: [] });
  });

  it('a job is paid once and charged once, in the attempt that learnt its charge; another run’s job is not charged', async () => {
    const state = new MemoryStateStore();
    const started = PaidLedger.open(state, 1);
    const job = { kind: 'filter' as const, for: 'filter job', job: 'snap_1', startedAt: '2025-03-01T02:30:00.000Z' };
    await started.paid(job);
    const resumed = PaidLedger.open(state, 2);
    // A lost answer adopted after a kill: the same job, not a second one.
    await resumed.paid(job);
    await resumed.charged('snap_1', 15);
    await resumed.charged('snap_1', 15);
    await resumed.charged('snap_configured', 99);
    expect(started.figures(1)).toEqual({
      paidCalls: 1,
      recordsCharged: 0,
      paid: [{ kind: 'filter', for: 'filter job', calls: 1, retried: 0, wasted: 0, job: 'snap_1' }],
    });
    expect(resumed.figures()).toEqual({
      paidCalls: 0,
      recordsCharged: 15,
      paid: [{ kind: 'filter', for: 'filter job', calls: 0, retried: 0, wasted: 0, records: 15, job: 'snap_1' }],
    });
    expect(resumed.jobs()).toEqual([
      { kind: 'filter', id: 'snap_1', started_at: '2025-03-01T02:30:00.000Z', recordsCharged: 15 },
    ]);
    expect(describePaid(resumed.figures())).toBe('0 calls, 15 records charged');
  });

  it('a run an earlier sluice started keeps its paid jobs, charged once', async () => {
    const state = new MemoryStateStore();
    await state.set('run:paid_jobs', [
      { kind: 'deep_lookup', id: 'ai_1', started_at: '2025-03-01T02:30:00.000Z' },
      { kind: 'filter', id: 'snap_2', records_charged: 4 },
    ]);
    const ledger = PaidLedger.open(state, 2);
    await ledger.charged('ai_1', 10);
    await ledger.charged('snap_2', 4);
    expect(ledger.jobs()).toEqual([
      { kind: 'deep_lookup', id: 'ai_1', started_at: '2025-03-01T02:30:00.000Z', recordsCharged: 10 },
      { kind: 'filter', id: 'snap_2', recordsCharged: 4 },
    ]);
    // Their calls were reported by the earlier attempts' own lines; this attempt learnt one charge.
    expect(ledger.figures()).toMatchObject({ paidCalls: 0, recordsCharged: 10 });
  });
});

describe('FileStateStore under many writers at once', () => {
  it('each change is on disk when its set resolves, however many share a write', async () => {
    const file = path.join(tempDir(), 'state.json');
    const state = await FileStateStore.open(file);
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    await Promise.all(
      keys.map(async (k, i) => {
        await state.set(k, i);
        // Read back from disk by another opener: this change is there once its set resolved.
        expect((await FileStateStore.open(file)).get(k)).toBe(i);
      }),
    );
    expect((await FileStateStore.open(file)).keys()).toEqual(keys);
  });
});
