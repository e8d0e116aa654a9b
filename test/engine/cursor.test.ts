/**
 * Cursor state (src/engine/cursor.ts) through runPipeline over in-memory components: checkpoints go in with the
 * units that advanced them and come back, counting only what every sink committed.
 */
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Batch, SourceContext, WorkUnit } from '../../src/core/types.js';
import { CheckpointNotFinal } from '../../src/core/checkpoint.js';
import { checkpointedRead, effectiveCheckpoints, sinkCheckpoints } from '../../src/engine/cursor.js';
import { runPipeline } from '../../src/engine/run.js';
import {
  MemorySource,
  recordingLogger,
  sourceContext,
  type MemoryUnit,
  type MemorySourceOptions,
} from './in-memory.js';
import { memoryPipeline, quiet } from './memory-pipeline.js';

/** Units numbered 1..n (`seq`); plans only those past the highest committed `seq`, as a cursor source does. */
class CursorSource extends MemorySource {
  /** What each plan() was given in `ctx.checkpoints`. */
  readonly given: (ReadonlyMap<string, unknown> | undefined)[] = [];

  constructor(n: number, opts: MemorySourceOptions = {}) {
    super(seqUnits(n), opts);
  }

  override async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    this.given.push(ctx.checkpoints);
    const seqs = [...(ctx.checkpoints?.values() ?? [])].map((c) => (c as { seq: number }).seq);
    const cursor = Math.max(0, ...seqs);
    return (await super.plan(ctx)).filter((u) => (u.params.seq as number) > cursor);
  }

  unitCheckpoint(u: WorkUnit): unknown {
    return { seq: u.params.seq };
  }
}

function seqUnits(n: number): MemoryUnit[] {
  return Array.from({ length: n }, (_, i) => ({ id: `u${i + 1}`, params: { seq: i + 1 }, rows: [{ id: i + 1 }] }));
}

const noTransforms = { transforms: [] };
const ids = (m: ReadonlyMap<string, unknown>): string[] => [...m.keys()].map((k) => k.replace(/^[^/]*\//, '')).sort();

describe('effectiveCheckpoints', () => {
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
    const eff = effectiveCheckpoints([a, b]);
    expect([...eff]).toEqual([['u1', 2]]);
    expect(effectiveCheckpoints([])).toEqual(new Map());
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
    expect([...effectiveCheckpoints(await sinkCheckpoints([good, bad]))]).toEqual([['u1', { seq: 1 }]]);

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

  it('fails with exit code 2, naming the sink, when a sink cannot store checkpoints', async () => {
    const w = memoryPipeline(new CursorSource(2), { a: {}, legacy: { noCheckpoints: true } });
    const err = (await runPipeline(w.pipeline(noTransforms), quiet, {
      registry: w.registry,
      log: recordingLogger(),
    }).catch((e: unknown) => e)) as SluiceError;
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('memory legacy');
    expect(err.hint).toContain('incremental: false');
    expect(w.sinks.get('a')!.rows.size).toBe(0);
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

  it('a source whose checkpoint depends on its rows gets it set once the read is drained, never by the raw path', async () => {
    class RowCursor extends CursorSource {
      readonly checkpointFromRows = true;
      private readonly maxId = new Map<string, number>();
      override async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
        for await (const b of super.read(unit, ctx)) {
          for (const r of b) this.maxId.set(unit.id, Math.max(this.maxId.get(unit.id) ?? 0, r.id as number));
          yield b;
        }
      }
      override unitCheckpoint(u: WorkUnit): unknown {
        return { seq: u.params.seq, maxId: this.maxId.get(u.id) };
      }
    }
    const w = memoryPipeline(new RowCursor(2, { rawFormat: 'jsonl' }), { a: { nativeFormats: ['jsonl'] } });
    await runPipeline(w.pipeline(noTransforms), quiet, { registry: w.registry, log: recordingLogger() });
    const a = w.sinks.get('a')!;
    expect(a.writes.map((x) => x.path)).toEqual(['rows', 'rows']);
    expect([...a.checkpoints.values()]).toEqual(
      expect.arrayContaining([
        { seq: 1, maxId: 1 },
        { seq: 2, maxId: 2 },
      ]),
    );
  });
});

describe('checkpointedRead', () => {
  it('hands over the checkpoint once the read drained, refuses it before, and gives each attempt its own', async () => {
    let n = 0;
    class RowSource extends MemorySource {
      readonly checkpointFromRows = true;
      unitCheckpoint(): unknown {
        return `drained ${++n}`;
      }
    }
    const source = new RowSource([{ id: 'u1', rows: [{ id: 1 }] }]);
    const u: WorkUnit = { id: 'u1', params: {} };
    const ctx = sourceContext();
    const first = checkpointedRead(source, u);
    expect(first.source.rawFile).toBeUndefined();
    const it = first.source.read(u, ctx)[Symbol.asyncIterator]();
    await it.next();
    // A sink that asks before the last batch would store nothing (or an earlier value): a programming error.
    expect(() => first.commit.checkpoint()).toThrow(CheckpointNotFinal);
    expect((await it.next()).done).toBe(true);
    expect(first.commit.checkpoint()).toBe('drained 1');
    // Taken when the read drained, not when asked: the source's later state does not change it.
    source.unitCheckpoint();
    expect(first.commit.checkpoint()).toBe('drained 1');

    // The next attempt reads again: cut short, it hands over nothing, and never the first attempt's value.
    const again = checkpointedRead(source, u);
    const it2 = again.source.read(u, ctx)[Symbol.asyncIterator]();
    await it2.next();
    await it2.return?.();
    expect(() => again.commit.checkpoint()).toThrow(/before the unit's batches were drained/);
  });

  it('hands over a checkpoint that does not depend on the rows before the read, and none for other sources', () => {
    class FileLike extends MemorySource {
      unitCheckpoint(unit: WorkUnit): unknown {
        return { file: unit.id };
      }
    }
    const u: WorkUnit = { id: 'u1', params: {} };
    const read = checkpointedRead(new FileLike([{ id: 'u1', rows: [] }], { rawFormat: 'jsonl' }), u);
    expect(read.commit.checkpoint()).toEqual({ file: 'u1' });
    expect(read.source.rawFile).toBeDefined();
    expect(checkpointedRead(new MemorySource([]), u).commit.checkpoint()).toBeUndefined();
  });
});
