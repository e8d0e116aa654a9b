/**
 * A run's units through the path (src/unit/run-units.ts) over in-memory components: each unit once, into the sinks
 * that have not committed it, under the run-scoped id; the units a read hands on (and those a skipped unit leads to)
 * followed; the first failure stops new units.
 */
import { describe, expect, it } from 'vitest';
import { RetryPolicy } from '../../src/core/retry.js';
import type { WorkUnit } from '../../src/core/types.js';
import { EVOLVE } from '../../src/schema/contract.js';
import { runUnits, sinkUnit, type RunUnitsOptions, type UnitCounts } from '../../src/unit/run-units.js';
import { UnitPath } from '../../src/unit/unit-path.js';
import {
  MemorySink,
  MemorySource,
  counters,
  recordingLogger,
  sourceContext,
  tempDir,
  type MemoryUnit,
} from '../support/in-memory.js';

async function run(source: MemorySource, sinks: MemorySink[], over: Partial<RunUnitsOptions> = {}) {
  const ctx = sourceContext();
  const log = recordingLogger();
  const path = new UnitPath({
    source,
    context: (signal) => ({ ...ctx, signal }),
    transforms: [],
    sinks: sinks.map((sink) => ({ sink, contract: EVOLVE, unstorable: 'dead_letter' as const })),
    fastPath: true,
    tmpDir: tempDir(),
    log,
    counters: counters(),
    deadLetter: ctx.deadLetter,
  });
  const result = await runUnits({
    runId: 'r1',
    planned: await source.plan(ctx),
    path,
    source,
    context: ctx,
    sinks,
    retry: new RetryPolicy({ attempts: 1, baseMs: 1, maxMs: 1 }),
    log,
    counters: counters(),
    signal: new AbortController().signal,
    ...over,
  });
  return { result, log };
}

const writes = (s: MemorySink): string[] => s.writes.map((w) => w.id).sort();

describe('runUnits', () => {
  it('loads each unit into the sinks that have not committed it, under the run-scoped id', async () => {
    const source = new MemorySource([
      { id: 'a', rows: [] },
      { id: 'b', rows: [] },
      { id: 'c', rows: [] },
    ]);
    // a: committed in both sinks by this run; b: in one; c: in none. Last run's `c` does not count.
    const one = new MemorySink('one', { committed: ['r1/a', 'r1/b', 'r0/c'] });
    const two = new MemorySink('two', { committed: ['r1/a'] });
    const { result } = await run(source, [one, two]);
    expect(source.reads.sort()).toEqual(['b', 'c']);
    expect(writes(one)).toEqual(['r1/c']);
    expect(writes(two)).toEqual(['r1/b', 'r1/c']);
    expect(result.units).toEqual({ total: 3, done: 3, skipped: 1, failed: 0 });
    expect(result.committedPerSink).toEqual([1, 2]);
    expect(result.failure).toBeUndefined();
  });

  it('follows the units a read hands on, and those a unit skipped as committed leads to; each once', async () => {
    const page3: MemoryUnit = { id: 'p3', rows: [] };
    const page2: MemoryUnit = { id: 'p2', rows: [], next: [page3] };
    const source = new MemorySource([
      { id: 'p1', rows: [], next: [page2] },
      { id: 'other', rows: [], next: [page3] },
    ]);
    const { result } = await run(source, [new MemorySink('s', { committed: ['r1/p1'] })]);
    expect(source.reads.sort()).toEqual(['other', 'p2', 'p3']);
    expect(result.units).toEqual({ total: 4, done: 4, skipped: 1, failed: 0 });
  });

  it('leaves units handed on in other shards alone', async () => {
    const next = Array.from({ length: 30 }, (_, i) => ({ id: `n${i}`, rows: [] }));
    const reads = await Promise.all(
      [0, 1].map(async (index) => {
        const source = new MemorySource([{ id: 'root', rows: [], next, params: { shard_key: 'x' } }]);
        await run(source, [new MemorySink('s')], { shard: { index, count: 2 } });
        return source.reads.filter((u) => u !== 'root');
      }),
    );
    // Only the shard that holds the root reads it and so learns its successors; each successor runs in its own.
    const all = reads.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBeLessThan(next.length);
  });

  it('stops at the first failure: reports it, counts it, logs it, and starts nothing new', async () => {
    const boom = new Error('sink is full');
    const source = new MemorySource(
      Array.from({ length: 6 }, (_, i) => ({ id: `u${i}`, rows: [] })),
      { concurrency: 1, failures: { u1: [boom] } },
    );
    const { result, log } = await run(source, [new MemorySink('s')]);
    expect(result.failure).toBe(boom);
    expect(source.reads).toEqual(['u0', 'u1']);
    expect(result.units).toMatchObject({ total: 6, done: 1, failed: 1 });
    expect(log.lines).toContain('error: unit u1 failed: sink is full');
  });

  it('fails a unit whose after-commit hook throws (the crash-test seam), and tells the counts as they go', async () => {
    const source = new MemorySource([{ id: 'a', rows: [] }]);
    const crash = new Error('crash after commit');
    const committedBeforeCrash: string[] = [];
    const seen: UnitCounts[] = [];
    const sink = new MemorySink('s');
    const { result } = await run(source, [sink], {
      events: {
        counted: (u) => void seen.push({ ...u }),
        afterCommit: (u: WorkUnit) => {
          committedBeforeCrash.push(u.id);
          throw crash;
        },
      },
    });
    expect(committedBeforeCrash).toEqual(['a']);
    expect(sink.committed.has('r1/a')).toBe(true);
    expect(result.failure).toBe(crash);
    expect(seen).toEqual([{ total: 1, done: 0, skipped: 0, failed: 0 }]);
  });

  it('scopes unit ids by run', () => {
    expect(sinkUnit('r9', { id: 'snapshot:s:part:1', params: { part: 1 } })).toEqual({
      id: 'r9/snapshot:s:part:1',
      params: { part: 1 },
    });
  });
});
