import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { Batch, Row, TransformContext, WorkUnit } from '../../../src/core/types.js';
import { loadUnit, type LoadUnitOptions } from '../../../src/engine/stages/load-unit.js';
import type { BuiltTransform, TransformLetter } from '../../../src/engine/stages/transform-chain.js';
import { MemorySink, MemorySource, recordingLogger, sourceContext, tempDir } from '../in-memory.js';

const rows: Row[] = [
  { id: 1, tags: ['a', 'b'], meta: { k: 1 } },
  { id: 2, tags: [], meta: { k: 2 } },
];
const unit: WorkUnit = { id: 'u1', params: { page: 1 } };
const scoped: WorkUnit = { id: 'r/u1', params: { page: 1 } };

function options(source: MemorySource, over: Partial<LoadUnitOptions> = {}) {
  const sctx = sourceContext();
  const letters: TransformLetter[] = [];
  const opts: LoadUnitOptions = {
    source,
    commit: NO_CHECKPOINT,
    sctx,
    log: recordingLogger(),
    chain: { transforms: [], log: sctx.log, deadLetter: (d) => letters.push(d), counters: sctx.counters },
    rawPath: true,
    tmpDir: tempDir(),
    ...over,
  };
  return { opts, letters, counters: sctx.counters };
}

describe('loadUnit', () => {
  it('loads the raw file natively when every pending sink reads its format, and counts the records once', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const sinks = [
      new MemorySink('a', { nativeFormats: ['jsonl'] }),
      new MemorySink('b', { nativeFormats: ['jsonl'] }),
    ];
    const { opts, counters } = options(source);
    // How it was loaded is handed back, not told through callbacks.
    expect(await loadUnit(unit, scoped, sinks, opts)).toEqual({ path: 'native', refusals: [] });
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
    const { opts, counters } = options(source);
    const load = await loadUnit(unit, scoped, [picky, fine], opts);
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

  it('fails the unit on a native load error that is not a refusal (no silent fallback)', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const broken = new MemorySink('broken', { nativeFormats: ['jsonl'], failNative: new Error('database is locked') });
    const { opts } = options(source);
    await expect(loadUnit(unit, scoped, [broken], opts)).rejects.toThrow('database is locked');
    expect(broken.writes).toEqual([{ id: 'r/u1', path: 'native' }]);
  });

  it('decodes the raw file in JS for every sink when not all of them read its format', async () => {
    // CSV cells holding JSON come back as arrays and objects: the source's decode options say `jsonColumns: auto`.
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'csv' });
    const sinks = [new MemorySink('j', { nativeFormats: ['jsonl'] }), new MemorySink('c', { nativeFormats: ['csv'] })];
    const { opts, counters } = options(source);
    // Decided once the file's format is known, before any sink tried it: no refusal round trip.
    expect(await loadUnit(unit, scoped, sinks, opts)).toEqual({ path: 'decoded', refusals: [] });
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
    const { opts } = options(source);
    expect(await loadUnit(unit, scoped, sinks, opts)).toEqual({ path: 'rows', refusals: [] });
    expect(source.rawFiles).toEqual([]);
    expect(source.reads).toEqual(['u1']);
    for (const s of sinks) expect(s.writes).toEqual([{ id: 'r/u1', path: 'rows' }]);
  });

  it('reads the unit from the source when the raw path is off (transforms, or fast_path: false)', async () => {
    const source = new MemorySource([{ id: 'u1', rows }], { rawFormat: 'jsonl' });
    const sink = new MemorySink('native', { nativeFormats: ['jsonl'] });
    const { opts } = options(source, { rawPath: false });
    await loadUnit(unit, scoped, [sink], opts);
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
    const { opts, letters, counters } = options(source);
    opts.chain = { ...opts.chain, transforms: [tag('skipped'), dropOdd, tag('last')] };
    opts.firstTransform = () => 1;
    await loadUnit(unit, scoped, [sink], opts);
    expect(sink.rows.get('r/u1')).toEqual([{ ...rows[1], last: true }]);
    expect(letters).toEqual([
      { unit: 'u1', stage: 'transform:drop-odd', reason: 'odd', step: 1, index: 0, unit_params: { page: 1 } },
    ]);
    expect(counters.records).toBe(1);
  });
});
