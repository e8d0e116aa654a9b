import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { NativeLoadRefused, SluiceError } from '../../../src/core/errors.js';
import type { Row } from '../../../src/core/types.js';
import { unitFileStem } from '../../../src/sink-kit/output-files/unit-file-name.js';
import type { DuckDBSinkConfig } from '../../../sinks/duckdb/config.js';
import { DuckDBSink } from '../../../sinks/duckdb/sink.js';
import {
  batches,
  columnTypes,
  failingBatches,
  query,
  RICH_BACK,
  richRows,
  sinkContext,
  unit,
  type TestContext,
} from '../helpers.js';
import { duckdbSinkHarness } from './harness.js';
import { armed } from '../../support/failpoints.js';

const h = duckdbSinkHarness('out/w.duckdb');
const { config } = h;

const openSink = (over: Partial<DuckDBSinkConfig> = {}, ctx: TestContext = sinkContext(h.dir)) => h.openSink(over, ctx);

const count = async (sql: string): Promise<number> => Number((await query(sql, h.db))[0]!.n);

describe('duckdb sink', () => {
  it('creates the table with native nested types and reads back exact values', async () => {
    const sink = await openSink();
    const r = await sink.writeUnit(unit('u1'), batches(richRows().slice(0, 1), richRows().slice(1)), NO_CHECKPOINT);
    expect(r).toEqual({ committed: true, records: 2 });
    expect(await columnTypes('SELECT * FROM t', h.db)).toEqual({
      id: 'VARCHAR',
      n: 'BIGINT',
      score: 'DOUBLE',
      ok: 'BOOLEAN',
      at: 'TIMESTAMP',
      day: 'DATE',
      funding: 'STRUCT(rounds BIGINT, "last" TIMESTAMP)',
      tags: 'VARCHAR[]',
      people: 'STRUCT("name" VARCHAR, age BIGINT)[]',
      note: 'VARCHAR',
    });
    expect(await query('SELECT * FROM t ORDER BY id', h.db)).toEqual(RICH_BACK);
  });

  it('commits a unit with its _sluice_state row; committing it again is a no-op', async () => {
    const sink = await openSink();
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    expect(await sink.committedUnits()).toEqual(new Set(['run1/u1']));
    expect(await count('SELECT count(*) AS n FROM t')).toBe(2);
    expect(await query('SELECT pipeline, table_name, unit_id, records FROM _sluice_state', h.db)).toEqual([
      { pipeline: 'test', table_name: 't', unit_id: 'run1/u1', records: 2 },
    ]);
    // A later process sees the same checkpoint.
    await sink.close();
    h.opened.pop();
    const again = await openSink();
    expect(await again.committedUnits()).toEqual(new Set(['run1/u1']));
    expect(await again.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
  });

  it('a failure between the data and the checkpoint leaves neither; the retry commits exactly once', async () => {
    let fail = true;
    armed('duckdb:after-data', () => {
      if (fail) throw new Error('crash between data and checkpoint');
    });
    const sink = await openSink();
    await expect(sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).rejects.toThrow(/crash between data/);
    expect(await count('SELECT count(*) AS n FROM t')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM _sluice_state')).toBe(0);
    expect(await sink.committedUnits()).toEqual(new Set());
    fail = false;
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    expect(await count('SELECT count(*) AS n FROM t')).toBe(2);
    expect(await count('SELECT count(*) AS n FROM _sluice_state')).toBe(1);
  });

  it('commits nothing of a unit whose source fails half-way', async () => {
    const sink = await openSink();
    await expect(sink.writeUnit(unit('u1'), failingBatches(richRows()), NO_CHECKPOINT)).rejects.toThrow(/source broke/);
    expect(await sink.committedUnits()).toEqual(new Set());
    expect(await readdir(`${h.db}.sluice-tmp`)).toEqual([]);
  });

  it('adds columns and struct fields that appear later, widens int to double, keeps the values', async () => {
    const sink = await openSink();
    await sink.writeUnit(unit('u1'), batches([{ id: 1, v: 1, o: { a: 1 }, l: [{ x: 1 }] }]), NO_CHECKPOINT);
    await sink.writeUnit(
      unit('u2'),
      batches([{ id: 2, v: 2.5, o: { a: 2, b: 'new' }, l: [{ x: 1.5, y: true }], added: new Date(0) }]),
      NO_CHECKPOINT,
    );
    expect(await columnTypes('SELECT * FROM t', h.db)).toEqual({
      id: 'BIGINT',
      v: 'DOUBLE',
      o: 'STRUCT(a BIGINT, b VARCHAR)',
      l: 'STRUCT(x DOUBLE, y BOOLEAN)[]',
      added: 'TIMESTAMP',
    });
    expect(await query('SELECT * FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, v: 1, o: { a: 1, b: null }, l: [{ x: 1, y: null }], added: null },
      { id: 2, v: 2.5, o: { a: 2, b: 'new' }, l: [{ x: 1.5, y: true }], added: '1970-01-01T00:00:00.000Z' },
    ]);
  });

  it('falls back to JSON for shapes that conflict, converting stored values, and logs the conflict list', async () => {
    const ctx = sinkContext(h.dir);
    const sink = await openSink({}, ctx);
    await sink.writeUnit(unit('u1'), batches([{ id: 1, d: { a: 1 }, p: 'cheap' }]), NO_CHECKPOINT);
    await sink.writeUnit(unit('u2'), batches([{ id: 2, d: 'none', p: 10 }]), NO_CHECKPOINT);
    expect(await columnTypes('SELECT d, p FROM t', h.db)).toEqual({ d: 'JSON', p: 'VARCHAR' });
    expect(await query('SELECT id, d::VARCHAR AS d, p FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, d: '{"a":1}', p: 'cheap' },
      { id: 2, d: '"none"', p: '10' },
    ]);
    const warning = ctx.logs.find((l) => l.includes('schema conflicts'));
    expect(warning).toContain('d: seen STRUCT, VARCHAR → stored as JSON');
    expect(warning).toContain('p: seen VARCHAR, BIGINT → stored as VARCHAR');
  });

  it('parses ISO text into an existing TIMESTAMP column, and widens it only for text that is not a timestamp', async () => {
    const sink = await openSink();
    await sink.writeUnit(unit('u1'), batches([{ id: 1, at: new Date('2024-01-01T00:00:00Z') }]), NO_CHECKPOINT);
    await sink.writeUnit(unit('u2'), batches([{ id: 2, at: '2024-01-02T03:00:00+02:00' }]), NO_CHECKPOINT);
    expect(await columnTypes('SELECT "at" FROM t', h.db)).toEqual({ at: 'TIMESTAMP' });
    expect(await query('SELECT id, "at" FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, at: '2024-01-01T00:00:00.000Z' },
      { id: 2, at: '2024-01-02T01:00:00.000Z' },
    ]);
    await sink.writeUnit(unit('u3'), batches([{ id: 3, at: 'yesterday' }]), NO_CHECKPOINT);
    expect(await columnTypes('SELECT "at" FROM t', h.db)).toEqual({ at: 'VARCHAR' });
    expect(await count('SELECT count(*) AS n FROM t')).toBe(3);
  });

  it('merge updates rows by key, and the last row for a key within a unit wins', async () => {
    const sink = await openSink({ write: 'merge', primary_key: ['k1', 'k2'] });
    await sink.writeUnit(
      unit('u1'),
      batches([
        { k1: 'a', k2: 1, v: 'old', extra: 1 },
        { k1: 'b', k2: 1, v: 'keep' },
      ]),
      NO_CHECKPOINT,
    );
    await sink.writeUnit(
      unit('u2'),
      batches([{ k1: 'a', k2: 1, v: 'first' }], [{ k1: 'a', k2: 1, v: 'last' }], [{ k1: 'a', k2: 2, v: 'other' }]),
      NO_CHECKPOINT,
    );
    expect(await query('SELECT k1, k2, v, extra FROM t ORDER BY k1, k2', h.db)).toEqual([
      { k1: 'a', k2: 1, v: 'last', extra: null },
      { k1: 'a', k2: 2, v: 'other', extra: null },
      { k1: 'b', k2: 1, v: 'keep', extra: null },
    ]);
    expect(await query('SELECT unit_id, records FROM _sluice_state ORDER BY unit_id', h.db)).toEqual([
      { unit_id: 'run1/u1', records: 2 },
      { unit_id: 'run1/u2', records: 3 },
    ]);
  });

  it('merge says which primary key column the data lacks', async () => {
    const sink = await openSink({ write: 'merge', primary_key: ['id'] });
    await expect(sink.writeUnit(unit('u1'), batches([{ name: 'x' }]), NO_CHECKPOINT)).rejects.toThrow(
      /primary key column "id" is not in the data/,
    );
  });

  it('replace is atomic: readers see the old table during the run and the new one after finish', async () => {
    const first = await openSink({ write: 'replace' });
    await first.writeUnit(unit('u1'), batches([{ id: 1, gen: 'old' }]), NO_CHECKPOINT);
    await first.finish();
    await first.close();
    h.opened.pop();

    const sink = await openSink({ write: 'replace' }, sinkContext(h.dir, { fresh: true }));
    await sink.writeUnit(unit('u2'), batches([{ id: 2, gen: 'new', more: true }]), NO_CHECKPOINT);
    await sink.writeUnit(unit('u3'), batches([{ id: 3, gen: 'new', more: false }]), NO_CHECKPOINT);
    expect(await query('SELECT id, gen FROM t', h.db)).toEqual([{ id: 1, gen: 'old' }]);
    await sink.finish();
    expect(await query('SELECT id, gen, more FROM t ORDER BY id', h.db)).toEqual([
      { id: 2, gen: 'new', more: true },
      { id: 3, gen: 'new', more: false },
    ]);
    expect(await query(`SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 't%'`, h.db)).toEqual([
      { table_name: 't' },
    ]);
    expect(await query('SELECT table_name, unit_id FROM _sluice_state ORDER BY unit_id', h.db)).toEqual([
      { table_name: 't', unit_id: 'run1/u2' },
      { table_name: 't', unit_id: 'run1/u3' },
    ]);
  });

  it('a failed replace run leaves the old table; a resumed run continues its generation; a fresh one restarts', async () => {
    const first = await openSink({ write: 'replace' });
    await first.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    await first.finish();
    await first.close();
    h.opened.pop();

    // Run 2 commits one unit, then dies before finish().
    const failed = await openSink({ write: 'replace' }, sinkContext(h.dir, { fresh: true }));
    await failed.writeUnit(unit('a'), batches([{ id: 10 }]), NO_CHECKPOINT);
    await failed.close();
    h.opened.pop();
    expect(await query('SELECT id FROM t', h.db)).toEqual([{ id: 1 }]);

    // Resumed: unit a is known, unit b is added, finish swaps both in.
    const resumed = await openSink({ write: 'replace' }, sinkContext(h.dir, { fresh: false }));
    expect(await resumed.committedUnits()).toEqual(new Set(['run1/a']));
    await resumed.writeUnit(unit('b'), batches([{ id: 11 }]), NO_CHECKPOINT);
    await resumed.close();
    h.opened.pop();

    // A fresh run drops that unfinished generation.
    const fresh = await openSink({ write: 'replace' }, sinkContext(h.dir, { fresh: true }));
    expect(await fresh.committedUnits()).toEqual(new Set());
    await fresh.writeUnit(unit('c'), batches([{ id: 20 }]), NO_CHECKPOINT);
    await fresh.finish();
    expect(await query('SELECT id FROM t', h.db)).toEqual([{ id: 20 }]);
  });

  it('loads a gzip JSONL file natively in the unit transaction, applying UTC offsets', async () => {
    const lines = [
      { id: 1, at: '2024-01-02T03:00:00+02:00', day: '2024-02-29', o: { a: [1, 2] }, gone: null },
      { id: 2, at: '2024-01-02T03:00:00Z', day: null, o: { a: [] }, gone: null },
    ];
    const file = path.join(h.dir, 'unit.jsonl.data');
    await writeFile(file, gzipSync(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'));
    const sink = await openSink();
    const r = await sink.capabilities.native!.load(
      unit('f1'),
      { path: file, decode: { format: 'jsonl' }, temporary: false },
      NO_CHECKPOINT,
    );
    expect(r).toEqual({ committed: true, records: 2 });
    expect(await columnTypes('SELECT * FROM t', h.db)).toEqual({
      id: 'BIGINT',
      at: 'TIMESTAMP',
      day: 'DATE',
      o: 'STRUCT(a BIGINT[])',
    });
    expect(await query('SELECT id, "at", day, o FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, at: '2024-01-02T01:00:00.000Z', day: '2024-02-29T00:00:00.000Z', o: { a: [1, 2] } },
      { id: 2, at: '2024-01-02T03:00:00.000Z', day: null, o: { a: [] } },
    ]);
    expect(
      await sink.capabilities.native!.load(
        unit('f1'),
        { path: file, decode: { format: 'jsonl' }, temporary: false },
        NO_CHECKPOINT,
      ),
    ).toEqual({
      committed: false,
      records: 0,
    });
  });

  it('refuses a file with a line that is not a JSON object, committing nothing (the engine then decodes it)', async () => {
    const file = path.join(h.dir, 'bad.jsonl');
    await writeFile(file, '{"id":1}\n{"id":\n');
    const sink = await openSink();
    const load = (id: string, format: 'jsonl' | 'csv' = 'jsonl') =>
      sink.capabilities
        .native!.load(unit(id), { path: file, decode: { format }, temporary: false }, NO_CHECKPOINT)
        .catch((e: unknown) => e);
    const notJson = await load('f1');
    expect(notJson).toBeInstanceOf(NativeLoadRefused);
    expect((notJson as Error).message).toMatch(/not JSON/);
    await writeFile(file, '{"id":1}\n[1,2]\n');
    const notObject = await load('f1');
    expect(notObject).toBeInstanceOf(NativeLoadRefused);
    expect((notObject as Error).message).toMatch(/not a JSON object/);
    expect(await sink.committedUnits()).toEqual(new Set());
    const csv = await load('f2', 'csv');
    expect(csv).toBeInstanceOf(NativeLoadRefused);
    expect((csv as Error).message).toMatch(/JSONL natively, not csv/);
  });

  it('takes concurrent units on one table, and two sinks on one file', async () => {
    const a = await openSink({ table: 'a' });
    const b = await openSink({ table: 'b', write: 'merge', primary_key: ['id'] });
    const rows = (u: number): Row[] =>
      Array.from({ length: 50 }, (_, i) => ({ id: u * 100 + i, u, v: i % 2 ? 1 : 1.5 }));
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, u) => [
        a.writeUnit(unit(`u${u}`), batches(rows(u).slice(0, 20), rows(u).slice(20)), NO_CHECKPOINT),
        b.writeUnit(unit(`u${u}`), batches(rows(u)), NO_CHECKPOINT),
      ]).flat(),
    );
    expect(results.every((r) => r.committed && r.records === 50)).toBe(true);
    expect(await count('SELECT count(*) AS n FROM a')).toBe(400);
    expect(await count('SELECT count(DISTINCT id) AS n FROM b')).toBe(400);
    expect(await count(`SELECT count(*) AS n FROM _sluice_state`)).toBe(16);
  });

  it('refuses two sinks on one table of one file', async () => {
    await openSink();
    await expect(openSink()).rejects.toThrow(/two sinks write to table/);
  });

  it('puts the table in its own schema when asked', async () => {
    const sink = await openSink({ schema: 'raw' });
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    expect(await query('SELECT id FROM raw.t', h.db)).toEqual([{ id: 1 }]);
    expect(await query('SELECT table_name FROM _sluice_state', h.db)).toEqual([{ table_name: 'raw.t' }]);
  });

  it('names the path and what to do when it cannot be written', async () => {
    await writeFile(path.join(h.dir, 'afile'), 'not a directory');
    const sink = new DuckDBSink(config({ path: 'afile/sub/w.duckdb' }));
    const err = await sink.open(sinkContext(h.dir)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toContain(path.join(h.dir, 'afile', 'sub', 'w.duckdb'));
    expect((err as SluiceError).hint).toMatch(/a file is in the way/);
  });

  it('removes staging files a crash left behind', async () => {
    const staging = `${h.db}.sluice-tmp`;
    await mkdir(staging, { recursive: true });
    await writeFile(path.join(staging, `${unitFileStem('t')}.run1_u9-abcdef12.0011.json`), '{"id":1}\n');
    await writeFile(path.join(staging, 'other-12345678.x.json'), '{}\n');
    await openSink();
    expect(await readdir(staging)).toEqual(['other-12345678.x.json']);
  });
});
