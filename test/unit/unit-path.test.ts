import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CheckpointNotFinal } from '../../src/core/checkpoint.js';
import type {
  Batch,
  Row,
  Sink,
  SourceContext,
  TransformContext,
  UnitCommit,
  UnitEnd,
  WorkUnit,
} from '../../src/core/types.js';
import type { BuiltTransform, UnitPathParts } from '../../src/unit/unit-path.js';
import { MemorySink, MemorySource } from '../support/in-memory.js';
import { attempt, unitPath } from '../support/unit-path.js';

const rows: Row[] = [
  { id: 1, tags: ['a', 'b'], meta: { k: 1 } },
  { id: 2, tags: [], meta: { k: 2 } },
];
const unit: WorkUnit = { id: 'u1', params: { page: 1 } };
const scoped: WorkUnit = { id: 'r/u1', params: { page: 1 } };

/** One attempt at `unit` into `sinks` through a path over `source`. */
async function loadOnce(source: MemorySource, sinks: Sink[], over: Partial<UnitPathParts> = {}) {
  const t = unitPath(source, sinks, over);
  const loaded = await t.path.load(unit, scoped, sinks, attempt());
  return { loaded, letters: t.letters, counters: t.parts.counters };
}

describe('the unit path', () => {
  it('loads the raw file natively when every pending sink reads its format, and counts the records once', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const sinks = [
      new MemorySink('a', { nativeFormats: ['jsonl'] }),
      new MemorySink('b', { nativeFormats: ['jsonl'] }),
    ];
    // How it was loaded is handed back, not told through callbacks.
    const { loaded, counters } = await loadOnce(source, sinks);
    expect(loaded).toEqual({ path: 'native', refusals: [], next: [] });
    for (const s of sinks) {
      expect(s.writes).toEqual([{ id: 'r/u1', path: 'native' }]);
      expect(s.rows.get('r/u1')).toEqual(rows);
    }
    expect(counters.records).toBe(2);
    expect(source.reads).toEqual([]);
    // A downloaded (temporary) file is deleted once loaded.
    expect(existsSync(source.rawFiles[0]!.path)).toBe(false);
  });

  it('decodes the raw file in JS, with the source’s decode options, for a sink that refused it', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const picky = new MemorySink('picky', { nativeFormats: ['jsonl'], refuse: () => 'a line is not an object' });
    const fine = new MemorySink('fine', { nativeFormats: ['jsonl'] });
    const { loaded: load, counters } = await loadOnce(source, [picky, fine]);
    expect(load.path).toBe('native');
    expect(picky.writes).toEqual([
      { id: 'r/u1', path: 'native' },
      { id: 'r/u1', path: 'rows' },
    ]);
    expect(fine.writes).toEqual([{ id: 'r/u1', path: 'native' }]);
    expect(picky.rows.get('r/u1')).toEqual(rows);
    expect(fine.rows.get('r/u1')).toEqual(rows);
    expect(load.refusals.map((r) => r.reason)).toEqual(['a line is not an object']);
    expect(counters.records).toBe(2);
    expect(source.reads).toEqual([]);
  });

  it('tells the scheduler the unit’s reading is over once every sink read the file, never while one decodes it', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const told: string[] = [];
    const sinks = (refuse: boolean): Sink[] => [
      new MemorySink('a', {
        nativeFormats: ['jsonl'],
        readEarly: true,
        beforeCommit: () => void told.push('a commits'),
      }),
      new MemorySink('b', {
        nativeFormats: ['jsonl'],
        readEarly: true,
        ...(refuse && { refuse: () => 'no' }),
        beforeCommit: () => void told.push('b commits'),
      }),
    ];
    const read = (): void => void told.push('read over');
    const both = sinks(false);
    await unitPath(source, both).path.load(unit, scoped, both, attempt(), read);
    // Told once, when the last sink to read the file did, before that one commits: the next unit may be read then.
    // The two read at once and either may finish first; each commits right after it read.
    expect(told).toHaveLength(3);
    expect(told[1]).toBe('read over');
    expect([told[0], told[2]].sort()).toEqual(['a commits', 'b commits']);
    told.length = 0;
    // One refuses: it decodes the file in JS, which is reading still; the unit's place is held until it ends.
    const refusing = sinks(true);
    await unitPath(source, refusing).path.load(unit, scoped, refusing, attempt(), read);
    expect(told).not.toContain('read over');
  });

  it('fails the unit on a native load error that is not a refusal (no silent fallback)', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const broken = new MemorySink('broken', { nativeFormats: ['jsonl'], failNative: new Error('database is locked') });
    await expect(loadOnce(source, [broken])).rejects.toThrow('database is locked');
    expect(broken.writes).toEqual([{ id: 'r/u1', path: 'native' }]);
  });

  it('decodes the raw file in JS for every sink when not all of them read its format', async () => {
    // CSV cells holding JSON come back as arrays and objects: the source's decode options say `jsonColumns: auto`.
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'csv' });
    const sinks = [new MemorySink('j', { nativeFormats: ['jsonl'] }), new MemorySink('c', { nativeFormats: ['csv'] })];
    // Decided once the file's format is known, before any sink tried it: no refusal round trip.
    const { loaded, counters } = await loadOnce(source, sinks);
    expect(loaded).toEqual({ path: 'decoded', refusals: [], next: [] });
    // CSV text stays text (`id`); only the JSON-looking cells are decoded.
    const fromCsv = rows.map((r) => ({ ...r, id: String(r.id) }));
    for (const s of sinks) {
      expect(s.writes).toEqual([{ id: 'r/u1', path: 'rows' }]);
      expect(s.rows.get('r/u1')).toEqual(fromCsv);
    }
    expect(counters.records).toBe(2);
  });

  it('reads the unit from the source when a pending sink loads no file natively', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const sinks = [new MemorySink('native', { nativeFormats: ['jsonl'] }), new MemorySink('rows')];
    expect((await loadOnce(source, sinks)).loaded).toEqual({ path: 'rows', refusals: [], next: [] });
    expect(source.rawFiles).toEqual([]);
    expect(source.reads).toEqual(['u1']);
    for (const s of sinks) expect(s.writes).toEqual([{ id: 'r/u1', path: 'rows' }]);
  });

  it('reads the unit from the source when the raw path is off (transforms, or fast_path: false)', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const sink = new MemorySink('native', { nativeFormats: ['jsonl'] });
    await loadOnce(source, [sink], { fastPath: false });
    expect(source.rawFiles).toEqual([]);
    expect(sink.writes).toEqual([{ id: 'r/u1', path: 'rows' }]);
  });

  it('runs the transforms from the unit’s first one, their letters marked with step, ordinal and params', async () => {
    const source = new MemorySource([{ id: 'u1', rows }]);
    const sink = new MemorySink('s');
    const dropOdd: BuiltTransform = {
      type: 'drop-odd',
      fn: async function* (batches: AsyncIterable<Batch>, ctx: TransformContext) {
        for await (const b of batches)
          yield b.filter((r) => {
            if ((r.id as number) % 2 === 0) return true;
            ctx.deadLetter({ unit: ctx.unitId, stage: 'transform:drop-odd', reason: 'odd' });
            return false;
          });
      },
    };
    const tag = (name: string): BuiltTransform => ({
      type: name,
      fn: async function* (batches: AsyncIterable<Batch>) {
        for await (const b of batches) yield b.map((r) => ({ ...r, [name]: true }));
      },
    });
    const { letters, counters } = await loadOnce(source, [sink], {
      transforms: [tag('skipped'), dropOdd, tag('last')],
      firstTransform: () => 1,
    });
    expect(sink.rows.get('r/u1')).toEqual([{ ...rows[1], last: true }]);
    expect(letters).toEqual([
      { unit: 'u1', stage: 'transform:drop-odd', reason: 'odd', step: 1, index: 0, unit_params: { page: 1 } },
    ]);
    expect(counters.records).toBe(1);
  });

  it('hands each sink the checkpoint the read ended with, and refuses it to a sink that asks before the end', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { checkpoint: (_u, r) => ({ ids: r.length }) });
    const sink = new MemorySink('s');
    await loadOnce(source, [sink]);
    expect(sink.checkpoints.get('r/u1')).toEqual({ ids: 2 });

    // A sink that asks for the checkpoint before it drained the rows would store nothing (or an earlier value).
    class Eager extends MemorySink {
      override async writeUnit(u: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit) {
        commit.checkpoint();
        return super.writeUnit(u, batches, commit);
      }
    }
    const eager = new Eager('eager');
    await expect(loadOnce(source, [eager])).rejects.toBeInstanceOf(CheckpointNotFinal);
    expect(eager.committed.size).toBe(0);
  });

  it('gives each attempt its own checkpoint: one cut short hands over nothing, the next its own read’s', async () => {
    let reads = 0;
    class Flaky extends MemorySource {
      override async *read(u: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd> {
        const read = ++reads;
        yield* super.read(u, ctx);
        if (read === 1) throw new Error('connection reset mid-body');
        return { checkpoint: `read ${read}` };
      }
    }
    const source = new Flaky([{ id: 'u1', rows }], { checkpoint: () => 'unused' });
    const sink = new MemorySink('s');
    await expect(loadOnce(source, [sink])).rejects.toThrow('connection reset');
    expect(sink.committed.size).toBe(0);
    await loadOnce(source, [sink]);
    expect(sink.checkpoints.get('r/u1')).toBe('read 2');
  });

  it('hands on the units the read led to; a unit every sink found committed asks the source where it leads', async () => {
    const source = new MemorySource([{ id: 'u1', rows, next: [{ id: 'u2', rows: [] }] }]);
    expect((await loadOnce(source, [new MemorySink('s')])).loaded.next).toEqual([{ id: 'u2', params: {} }]);
    const done = new MemorySink('done', { committed: ['r/u1'] });
    expect((await loadOnce(source, [done])).loaded.next).toEqual([{ id: 'u2', params: {} }]);
  });
});
