import { describe, expect, it } from 'vitest';
import type { Sink, WorkUnit } from '../../../src/core/types.js';
import { scheduleRun, sinkUnit, type ScheduleRunOptions } from '../../../src/engine/stages/schedule.js';
import type { ProgressState } from '../../../src/engine/progress.js';
import { MemorySink, MemorySource, counters, recordingLogger, sourceContext, type MemoryUnit } from '../in-memory.js';

function options(source: MemorySource, sinks: MemorySink[], over: Partial<ScheduleRunOptions> = {}) {
  const ran: { unit: string; sinkUnit: string; sinks: string[] }[] = [];
  const opts: ScheduleRunOptions = {
    runId: 'r1',
    source,
    sctx: sourceContext(),
    sinks,
    planned: [],
    log: recordingLogger(),
    runUnit: async (u: WorkUnit, su: WorkUnit, todo: Sink[]) => {
      ran.push({ unit: u.id, sinkUnit: su.id, sinks: todo.map((s) => s.describe()) });
    },
    ...over,
  };
  return { opts, ran };
}

async function planned(source: MemorySource): Promise<WorkUnit[]> {
  return source.plan(sourceContext());
}

describe('scheduleRun', () => {
  it('runs each unit for the sinks that have not committed it, under the run-scoped id', async () => {
    const source = new MemorySource([
      { id: 'a', rows: [] },
      { id: 'b', rows: [] },
      { id: 'c', rows: [] },
    ]);
    // a: committed in both sinks by this run; b: in one; c: in none. Last run's `a` does not count.
    const one = new MemorySink('one', { committed: ['r1/a', 'r1/b', 'r0/c'] });
    const two = new MemorySink('two', { committed: ['r1/a'] });
    const { opts, ran } = options(source, [one, two], { planned: await planned(source) });
    const result = await scheduleRun(opts);
    expect(ran.sort((x, y) => x.unit.localeCompare(y.unit))).toEqual([
      { unit: 'b', sinkUnit: 'r1/b', sinks: ['memory two'] },
      { unit: 'c', sinkUnit: 'r1/c', sinks: ['memory one', 'memory two'] },
    ]);
    expect(result.units).toEqual({ total: 3, done: 3, skipped: 1, failed: 0 });
    expect(result.failure).toBeUndefined();
  });

  it('follows discovered units, also from a unit skipped as committed, and runs each once', async () => {
    const page3: MemoryUnit = { id: 'p3', rows: [] };
    const page2: MemoryUnit = { id: 'p2', rows: [], next: [page3] };
    const source = new MemorySource([
      { id: 'p1', rows: [], next: [page2] },
      { id: 'other', rows: [], next: [page3] },
    ]);
    const { opts, ran } = options(source, [new MemorySink('s', { committed: ['r1/p1'] })], {
      planned: await planned(source),
    });
    const result = await scheduleRun(opts);
    expect(ran.map((r) => r.unit).sort()).toEqual(['other', 'p2', 'p3']);
    expect(result.units).toEqual({ total: 4, done: 4, skipped: 1, failed: 0 });
  });

  it('leaves discovered units of other shards alone', async () => {
    const next = Array.from({ length: 30 }, (_, i) => ({ id: `n${i}`, rows: [] }));
    const source = new MemorySource([{ id: 'root', rows: [], next, params: { shard_key: 'x' } }]);
    const shards = await Promise.all(
      [0, 1].map(async (index) => {
        const { opts, ran } = options(source, [new MemorySink('s')], {
          planned: await planned(source),
          shard: { index, count: 2 },
        });
        await scheduleRun(opts);
        return ran.map((r) => r.unit).filter((u) => u !== 'root');
      }),
    );
    // Only the shard that holds the root reads it and so discovers its successors; each successor runs in its own.
    const all = shards.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBeLessThan(next.length);
  });

  it('stops at the first failure: reports it, counts it, logs it, and starts nothing new', async () => {
    const source = new MemorySource(
      Array.from({ length: 6 }, (_, i) => ({ id: `u${i}`, rows: [] })),
      {
        concurrency: 1,
      },
    );
    const log = recordingLogger();
    const boom = new Error('sink is full');
    const ran: string[] = [];
    const { opts } = options(source, [new MemorySink('s')], {
      planned: await planned(source),
      log,
      runUnit: async (u) => {
        ran.push(u.id);
        if (u.id === 'u1') throw boom;
      },
    });
    const result = await scheduleRun(opts);
    expect(result.failure).toBe(boom);
    expect(ran).toEqual(['u0', 'u1']);
    expect(result.units).toMatchObject({ total: 6, done: 1, failed: 1 });
    expect(log.lines).toContain('error: unit u1 failed: sink is full');
  });

  it('fails a unit whose after-commit hook throws (the crash-test seam), and updates progress', async () => {
    const source = new MemorySource([{ id: 'a', rows: [] }]);
    const progress: ProgressState = { plan: '', unitsTotal: 0, unitsDone: 0, counters: counters(), startedAt: 0 };
    const crash = new Error('crash after commit');
    const committedBeforeCrash: string[] = [];
    const { opts } = options(source, [new MemorySink('s')], {
      planned: await planned(source),
      progress,
      afterCommit: (u) => {
        committedBeforeCrash.push(u.id);
        throw crash;
      },
    });
    const result = await scheduleRun(opts);
    expect(committedBeforeCrash).toEqual(['a']);
    expect(result.failure).toBe(crash);
    expect(progress).toMatchObject({ unitsTotal: 1, unitsDone: 0 });
  });

  it('scopes unit ids by run', () => {
    expect(sinkUnit('r9', { id: 'snapshot:s:part:1', params: { part: 1 } })).toEqual({
      id: 'r9/snapshot:s:part:1',
      params: { part: 1 },
    });
  });
});
