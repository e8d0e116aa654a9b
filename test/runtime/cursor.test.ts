/**
 * Where the next run starts (src/runtime/cursor.ts), through runPipeline over in-memory components: checkpoints go
 * in with the units that advanced them and come back, counting only what every sink committed.
 */
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Batch, Sink, SourceContext, UnitEnd, WorkUnit } from '../../src/core/types.js';
import { checkpointsOf, committedList } from '../../src/runtime/cursor.js';
import { runPipeline } from '../../src/operations/run.js';
import { MemorySource, recordingLogger, type MemoryUnit, type MemorySourceOptions } from '../support/in-memory.js';
import { memoryPipeline, quiet } from '../support/memory-pipeline.js';

/** Units numbered 1..n (`seq`); plans only those past the highest committed `seq`, as a cursor source does. */
class CursorSource extends MemorySource {
  /** What each plan() was given in `ctx.checkpoints`. */
  readonly given: (ReadonlyMap<string, unknown> | undefined)[] = [];

  constructor(n: number, opts: MemorySourceOptions = {}) {
    super(seqUnits(n), { checkpoint: (u) => ({ seq: u.params.seq }), ...opts });
  }

  override async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    this.given.push(ctx.checkpoints);
    const seqs = [...(ctx.checkpoints?.values() ?? [])].map((c) => (c as { seq: number }).seq);
    const cursor = Math.max(0, ...seqs);
    return (await super.plan(ctx)).filter((u) => (u.params.seq as number) > cursor);
  }
}

function seqUnits(n: number): MemoryUnit[] {
  return Array.from({ length: n }, (_, i) => ({ id: `u${i + 1}`, params: { seq: i + 1 }, rows: [{ id: i + 1 }] }));
}

const noTransforms = { transforms: [] };
const ids = (m: ReadonlyMap<string, unknown>): string[] => [...m.keys()].map((k) => k.replace(/^[^/]*\//, '')).sort();
const effective = async (sinks: Sink[]): Promise<Map<string, unknown>> =>
  checkpointsOf(committedList(await Promise.all(sinks.map((s) => s.committedCheckpoints()))));

describe('the checkpoints every sink committed', () => {
  it('keeps units every sink committed, by source unit id, the latest run winning', () => {
    const a = new Map<string, unknown>([
      ['20260101000000-aaaaaa/u1', 1],
      ['20260102000000-bbbbbb/u1', 2],
      ['20260102000000-bbbbbb/u2', 3],
    ]);
    const b = new Map<string, unknown>([
      ['20260102000000-bbbbbb/u1', 2],
      ['20260101000000-aaaaaa/u1', 1],
    ]);
    const eff = checkpointsOf(committedList([a, b]));
    expect([...eff]).toEqual([['u1', 2]]);
    expect(checkpointsOf(committedList([]))).toEqual(new Map());
  });
});

describe('cursor state in runPipeline', () => {
  it('commits each unit with its checkpoint and hands the next run only what it has not loaded', async () => {
    const w = memoryPipeline(new CursorSource(3), { a: {} });
    const opts = { registry: w.registry, log: recordingLogger() };
    await runPipeline(w.pipeline(noTransforms), quiet, opts);
    const a = w.sinks.get('a')!;
    expect([...a.checkpoints.values()]).toEqual(expect.arrayContaining([{ seq: 1 }, { seq: 2 }, { seq: 3 }]));

    // The next night: two new units upstream; only those are planned, read and committed.
    const next = new CursorSource(5);
    w.useSource(next);
    const summary = await runPipeline(w.pipeline(noTransforms), quiet, opts);
    expect(ids(next.given[0]!)).toEqual(['u1', 'u2', 'u3']);
    expect(next.reads.sort()).toEqual(['u4', 'u5']);
    expect(summary.units.total).toBe(2);
    expect(a.rows.size).toBe(5);
  });

  it('with two sinks, one failing mid-run, the cursor does not pass what the failing sink committed', async () => {
    const boom = new SluiceError('disk full');
    let failing = true;
    const w = memoryPipeline(new CursorSource(3, { concurrency: 1 }), {
      good: {},
      bad: {
        beforeCommit: (id) => {
          if (failing && id.endsWith('/u2')) throw boom;
        },
      },
    });
    const opts = { registry: w.registry, log: recordingLogger() };
    await expect(runPipeline(w.pipeline(noTransforms), quiet, opts)).rejects.toThrow('disk full');
    const good = w.sinks.get('good')!;
    const bad = w.sinks.get('bad')!;
    expect(ids(good.checkpoints)).toEqual(['u1', 'u2']);
    expect(ids(bad.checkpoints)).toEqual(['u1']);
    expect([...(await effective([good, bad]))]).toEqual([['u1', { seq: 1 }]]);

    // Fixed, the run resumes: u2 goes to the sink that lacks it, u3 to both, nothing twice.
    const rerun = new CursorSource(3);
    w.useSource(rerun);
    failing = false;
    await runPipeline(w.pipeline(noTransforms), quiet, opts);
    expect(rerun.reads.sort()).toEqual(['u2', 'u3']);
    for (const s of [good, bad]) {
      expect(ids(s.checkpoints)).toEqual(['u1', 'u2', 'u3']);
      expect([...s.rows.values()].flat().map((r) => r.id)).toHaveLength(3);
    }
    // The next run starts where both sinks are.
    const next = new CursorSource(3);
    w.useSource(next);
    await runPipeline(w.pipeline(noTransforms), quiet, opts);
    expect(ids(next.given[0]!)).toEqual(['u1', 'u2', 'u3']);
    expect(next.reads).toEqual([]);
  });

  it('a new run after a failed one starts from what every sink committed: the failing sink gets its units', async () => {
    let failing = true;
    const w = memoryPipeline(new CursorSource(3, { concurrency: 1 }), {
      good: {},
      bad: {
        beforeCommit: (id) => {
          if (failing && id.endsWith('/u2')) throw new SluiceError('disk full');
        },
      },
    });
    const opts = { registry: w.registry, log: recordingLogger() };
    await expect(runPipeline(w.pipeline(noTransforms), quiet, opts)).rejects.toThrow('disk full');
    failing = false;
    const rerun = new CursorSource(3);
    w.useSource(rerun);
    // --reset-cursor aside, a new run (here: stale, started over) plans from the shared cursor, not the good sink's.
    await runPipeline(w.pipeline({ ...noTransforms, resume: { stale_after: '0m' } }), quiet, opts);
    expect(ids(rerun.given[0]!)).toEqual(['u1']);
    expect(rerun.reads.sort()).toEqual(['u2', 'u3']);
    expect(ids(w.sinks.get('bad')!.checkpoints)).toEqual(['u1', 'u2', 'u3']);
  });

  it('--reset-cursor and --fresh start from the initial cursor', async () => {
    const w = memoryPipeline(new CursorSource(2), { a: {} });
    const opts = { registry: w.registry, log: recordingLogger() };
    await runPipeline(w.pipeline(noTransforms), quiet, opts);
    for (const flags of [{ resetCursor: true }, { fresh: true }]) {
      const again = new CursorSource(2);
      w.useSource(again);
      await runPipeline(w.pipeline(noTransforms), { ...quiet, ...flags }, opts);
      expect(again.given[0]).toEqual(new Map());
      expect(again.reads.sort()).toEqual(['u1', 'u2']);
    }
  });

  it('a checkpoint the read ends with (from its rows) is what the sinks commit with them', async () => {
    class RowCursor extends CursorSource {
      override async *read(unit: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd> {
        let maxId = 0;
        for await (const b of super.read(unit, ctx)) {
          for (const r of b) maxId = Math.max(maxId, r.id as number);
          yield b;
        }
        return { checkpoint: { seq: unit.params.seq, maxId } };
      }
    }
    const w = memoryPipeline(new RowCursor(2), { a: {} });
    await runPipeline(w.pipeline(noTransforms), quiet, { registry: w.registry, log: recordingLogger() });
    expect([...w.sinks.get('a')!.checkpoints.values()]).toEqual(
      expect.arrayContaining([
        { seq: 1, maxId: 1 },
        { seq: 2, maxId: 2 },
      ]),
    );
  });

  it('a raw file carries its checkpoint: the native load commits it as the read would', async () => {
    const w = memoryPipeline(new CursorSource(2, { rawFormat: 'jsonl' }), { a: { nativeFormats: ['jsonl'] } });
    await runPipeline(w.pipeline(noTransforms), quiet, { registry: w.registry, log: recordingLogger() });
    const a = w.sinks.get('a')!;
    expect(a.writes.map((x) => x.path)).toEqual(['native', 'native']);
    expect([...a.checkpoints.values()]).toEqual(expect.arrayContaining([{ seq: 1 }, { seq: 2 }]));
  });
});
