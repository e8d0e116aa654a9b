/**
 * A backfill's window across the attempts of its run (operations/backfill.ts): kept in the run's state, resumed as the
 * backfill it is (also by a plain `sluice run`), and never started over another unfinished run.
 */
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { BackfillWindow } from '../../src/core/types.js';
import { BACKFILL_KEY, backfillOfRun } from '../../src/operations/backfill.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { recordingLogger } from '../support/in-memory.js';

const week: BackfillWindow = { of: 'timestamp', from: '2025-03-01T00:00:00.000Z', to: '2025-03-08T00:00:00.000Z' };

function run(resumed: boolean, state = new MemoryStateStore()) {
  const log = recordingLogger();
  return { state, runId: 'r1', resumed, log };
}

describe('the window of a backfill run', () => {
  it('is kept in the state of a new run, and a nightly run keeps none', async () => {
    const r = run(false);
    expect(await backfillOfRun(week, r)).toEqual(week);
    expect(r.state.get(BACKFILL_KEY)).toEqual(week);
    const nightly = run(false);
    expect(await backfillOfRun(undefined, nightly)).toBeUndefined();
    expect(nightly.state.get(BACKFILL_KEY)).toBeUndefined();
  });

  it('is resumed with the run: by the same --from/--to, or by a plain run, which says so', async () => {
    const state = new MemoryStateStore();
    await state.set(BACKFILL_KEY, week);
    expect(await backfillOfRun({ ...week }, run(true, state))).toEqual(week);
    const plain = run(true, state);
    expect(await backfillOfRun(undefined, plain)).toEqual(week);
    expect(plain.log.lines.join('\n')).toMatch(/run r1 is an unfinished backfill \(timestamp > .*\): resuming it/);
  });

  it('is refused (exit 2) over an unfinished nightly run or another window, the state untouched', async () => {
    const nightly = run(true);
    const err = await backfillOfRun(week, nightly).catch((e: unknown) => e as SluiceError);
    expect(err).toBeInstanceOf(SluiceError);
    expect(err).toMatchObject({ exitCode: 2 });
    expect((err as SluiceError).message).toMatch(/run r1 of this pipeline did not finish \(a nightly load\)/);
    expect((err as SluiceError).hint).toMatch(/finish that run first/);
    expect(nightly.state.get(BACKFILL_KEY)).toBeUndefined();

    const other = run(true);
    await other.state.set(BACKFILL_KEY, week);
    await expect(backfillOfRun({ ...week, to: '2025-03-09T00:00:00.000Z' }, other)).rejects.toThrow(
      /did not finish \(a backfill of timestamp > "2025-03-01T00:00:00.000Z" and ≤ "2025-03-08T00:00:00.000Z"\)/,
    );
    expect(other.state.get(BACKFILL_KEY)).toEqual(week);
  });
});
