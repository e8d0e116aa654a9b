/** `max_dead_letters`: the budget's arithmetic, and runPipeline stopping on it (in-memory components). */
import { describe, expect, it } from 'vitest';
import { EXIT_CODES, FailureBudgetExceeded } from '../../src/core/errors.js';
import { FailureBudget, MIN_RECORDS_FOR_SHARE, parseDeadLetterLimit } from '../../src/operations/failure-budget.js';
import { formatSummary } from '../../src/operations/summary.js';
import { runPipeline } from '../../src/operations/run.js';
import type { Row } from '../../src/core/types.js';
import { MemorySource, recordingLogger } from '../support/in-memory.js';
import { memoryPipeline, quiet } from '../support/memory-pipeline.js';

const letter = (unit: string, index: number, reason = 'odd id') => ({
  run: 'r1',
  unit,
  stage: 'transform:x',
  index,
  reason,
});

describe('FailureBudget', () => {
  it('reads a count or a percentage', () => {
    expect(parseDeadLetterLimit(undefined)).toBeUndefined();
    expect(parseDeadLetterLimit(100)).toEqual({ kind: 'count', max: 100 });
    expect(parseDeadLetterLimit('1%')).toEqual({ kind: 'share', percent: 1 });
    expect(parseDeadLetterLimit('0.5 %')).toEqual({ kind: 'share', percent: 0.5 });
    expect(() => parseDeadLetterLimit('lots')).toThrow(/neither a count nor a percentage/);
  });

  it('without a limit is never exceeded but still tallies reasons, most frequent first', () => {
    const b = new FailureBudget(undefined);
    ['a', 'b', 'b', 'c', 'b', 'a', 'd'].forEach((r, i) => b.note(letter('u', i, r)));
    expect(b.exceeded(0, true)).toBe(false);
    expect(b.count).toBe(7);
    expect(b.topReasons()).toEqual([
      { reason: 'b', count: 3 },
      { reason: 'a', count: 2 },
      { reason: 'c', count: 1 },
    ]);
  });

  it('a count is exceeded by the letter after the last one allowed', () => {
    const b = new FailureBudget({ kind: 'count', max: 2 });
    b.note(letter('u', 0));
    b.note(letter('u', 1));
    expect(b.exceeded(0)).toBe(false);
    b.note(letter('u', 2));
    expect(b.exceeded(0)).toBe(true);
    expect(b.error(0)).toBeInstanceOf(FailureBudgetExceeded);
    expect(b.error(0).exitCode).toBe(EXIT_CODES.failureBudget);
    expect(b.error(0).message).toMatch(
      /^3 records dead-lettered, over the budget of 2 \(max_dead_letters\): odd id ×3/,
    );
  });

  it('counts a letter written again (a unit read again) once', () => {
    const b = new FailureBudget({ kind: 'count', max: 1 });
    b.note(letter('u', 0));
    b.note(letter('u', 0));
    expect(b.count).toBe(1);
    expect(b.exceeded(0)).toBe(false);
  });

  it('judges a percentage only after the minimum of records mid-run, and always at the end', () => {
    const b = new FailureBudget({ kind: 'share', percent: 10 });
    for (let i = 0; i < 5; i++) b.note(letter('u', i));
    // 5 of 10 seen: 50%, but too few records to judge mid-run.
    expect(b.exceeded(5)).toBe(false);
    expect(b.exceeded(5, true)).toBe(true);
    // 5 of 1000 records seen: judged, and within 10%.
    expect(b.exceeded(MIN_RECORDS_FOR_SHARE - 5)).toBe(false);
    for (let i = 5; i < 150; i++) b.note(letter('u', i));
    expect(b.exceeded(MIN_RECORDS_FOR_SHARE - 150)).toBe(true);
    expect(b.error(MIN_RECORDS_FOR_SHARE - 150).message).toMatch(
      /^150 records dead-lettered \(15% of 1000 records\), over the budget of 10% of records/,
    );
  });
});

/** Units of one even (kept) and one odd (dead-lettered) record each. */
const halfBad = (n: number): { id: string; rows: Row[] }[] =>
  Array.from({ length: n }, (_, i) => ({ id: `u${i + 1}`, rows: [{ id: 2 * i }, { id: 2 * i + 1 }] }));

describe('runPipeline with max_dead_letters', () => {
  it('no budget (the default) keeps the run going: 3 of 5 records rejected is still done', async () => {
    const rows = [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }, { id: 5, why: 'bad date' }];
    const w = memoryPipeline(new MemorySource([{ id: 'u1', rows }]), { a: {} });
    const summary = await runPipeline(w.pipeline(), quiet, { registry: w.registry, log: recordingLogger() });
    expect(summary.deadLetters).toBe(3);
    expect(summary.deadLetterReasons).toEqual([
      { reason: 'odd id', count: 2 },
      { reason: 'bad date', count: 1 },
    ]);
    expect(formatSummary(summary)).toContain('dead letters 3 (odd id ×2; bad date ×1)');
  });

  it('a count: stops taking units once exceeded, keeps what committed, fails with exit code 4; the rerun resumes', async () => {
    const source = new MemorySource(halfBad(6), { concurrency: 1 });
    const w = memoryPipeline(source, { a: {} });
    const log = recordingLogger();
    const err = await runPipeline(w.pipeline({ max_dead_letters: 2 }), quiet, { registry: w.registry, log }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FailureBudgetExceeded);
    expect((err as FailureBudgetExceeded).exitCode).toBe(4);
    expect((err as Error).message).toMatch(/^3 records dead-lettered, over the budget of 2 .*odd id ×3/);
    // The unit whose letter spent the budget was in flight: it committed; none started after it.
    expect(source.reads).toEqual(['u1', 'u2', 'u3']);
    const sink = w.sinks.get('a')!;
    expect([...sink.committed].map((id) => id.split('/')[1])).toEqual(['u1', 'u2', 'u3']);
    expect(
      log.lines.some((l) => /^warn: 3 records dead-lettered, over max_dead_letters: no new unit starts/.test(l)),
    ).toBe(true);
    expect((err as { summary: { units: unknown } }).summary.units).toEqual({
      total: 6,
      done: 3,
      skipped: 0,
      failed: 0,
    });

    // Same pipeline, same budget: the units left are as bad, so it fails again once they exceed it (committed
    // units are skipped, their letters are not counted again).
    const again = new MemorySource(halfBad(9), { concurrency: 1 });
    w.useSource(again);
    await expect(
      runPipeline(w.pipeline({ max_dead_letters: 2 }), quiet, { registry: w.registry, log: recordingLogger() }),
    ).rejects.toThrow(/^3 records dead-lettered/);
    expect(again.reads).toEqual(['u4', 'u5', 'u6']);

    // The pipeline fixed (nothing rejected any more): the run resumes where it stopped and completes.
    const fixed = new MemorySource(halfBad(9), { concurrency: 1 });
    w.useSource(fixed);
    const summary = await runPipeline(w.pipeline({ max_dead_letters: 2, transforms: [] }), quiet, {
      registry: w.registry,
      log: recordingLogger(),
    });
    expect(fixed.reads).toEqual(['u7', 'u8', 'u9']);
    expect(summary.units).toEqual({ total: 9, done: 9, skipped: 6, failed: 0 });
    expect(summary.deadLetters).toBe(0);
    expect(sink.committed.size).toBe(9);
    expect(sink.finished).toBe(true);
  });

  it('a percentage of few records is judged at the end; a raised budget then completes the run', async () => {
    const rows = [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }, { id: 5 }];
    const w = memoryPipeline(new MemorySource([{ id: 'u1', rows }]), { a: {} });
    const err = await runPipeline(w.pipeline({ max_dead_letters: '10%' }), quiet, {
      registry: w.registry,
      log: recordingLogger(),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FailureBudgetExceeded);
    expect((err as Error).message).toMatch(
      /^3 records dead-lettered \(60% of 5 records\), over the budget of 10% of records/,
    );
    const sink = w.sinks.get('a')!;
    // Every unit committed before the verdict, but the run is not complete (a `replace` would not have swapped).
    expect(sink.committed.size).toBe(1);
    expect(sink.finished).toBe(false);
    const done = await runPipeline(w.pipeline({ max_dead_letters: '80%' }), quiet, {
      registry: w.registry,
      log: recordingLogger(),
    });
    expect(done.units).toEqual({ total: 1, done: 1, skipped: 1, failed: 0 });
    expect(sink.finished).toBe(true);
  });

  it('a percentage is not judged on the first records mid-run', async () => {
    const clean = Array.from({ length: MIN_RECORDS_FOR_SHARE * 2 }, (_, i) => ({ id: 2 * i }));
    const source = new MemorySource(
      [
        { id: 'u1', rows: [{ id: 1 }, { id: 3 }, { id: 4 }] },
        { id: 'u2', rows: clean },
      ],
      { concurrency: 1 },
    );
    const w = memoryPipeline(source, { a: {} });
    const summary = await runPipeline(w.pipeline({ max_dead_letters: '1%' }), quiet, {
      registry: w.registry,
      log: recordingLogger(),
    });
    expect(source.reads).toEqual(['u1', 'u2']);
    expect(summary.deadLetters).toBe(2);
  });

  it('a percentage spent after the minimum of records stops the run there', async () => {
    const mostlyBad = Array.from({ length: MIN_RECORDS_FOR_SHARE }, (_, i) => ({
      id: i % 10 === 0 ? 2 * i : 2 * i + 1,
    }));
    const source = new MemorySource(
      [
        { id: 'u1', rows: mostlyBad },
        { id: 'u2', rows: [{ id: 2 }] },
      ],
      { concurrency: 1 },
    );
    const w = memoryPipeline(source, { a: {} });
    await expect(
      runPipeline(w.pipeline({ max_dead_letters: '5%' }), quiet, { registry: w.registry, log: recordingLogger() }),
    ).rejects.toThrow(/^900 records dead-lettered \(90% of 1000 records\)/);
    expect(source.reads).toEqual(['u1']);
  });
});
