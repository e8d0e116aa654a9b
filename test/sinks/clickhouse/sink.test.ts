/**
 * The clickhouse sink against a real server (Debian's 18.16, test/support/clickhouse-server.ts): the types it makes
 * and the values it stores, a unit stopped between every two steps of its commit and finished by the next attempt or
 * open, declared columns, schema evolution, writers at once. (`merge`, `replace`, drop, checks, connecting:
 * modes.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { knownCheckpoint, NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { DeclaredSchema } from '../../../src/core/declared.js';
import { SluiceError } from '../../../src/core/errors.js';
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  TIMESTAMP,
  VARCHAR,
  listOf,
} from '../../../src/core/logical-type.js';
import type { Batch } from '../../../src/core/types.js';
import { batches, failingBatches, richRows } from '../helpers.js';
import { available, clickhouseSinkHarness, DB, unit } from './harness.js';
import { armed, failWith } from '../../support/failpoints.js';

const ch = clickhouseSinkHarness();
const { freshTable, openSink, rows, columnTypes, sideTables } = ch;

describe.skipIf(!available)('clickhouse sink: append', () => {
  it('creates the table with ClickHouse types and stores every kind of value, readable as it was', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    const r = await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT);
    expect(r).toMatchObject({ committed: true, records: 2 });
    expect(await columnTypes(table)).toEqual({
      id: 'Nullable(String)',
      n: 'Nullable(Int64)',
      score: 'Nullable(Float64)',
      ok: "Nullable(UInt8) 'sluice:BOOLEAN'",
      at: "Nullable(String) 'sluice:TIMESTAMP'",
      day: "Nullable(String) 'sluice:DATE'",
      funding: "Nullable(String) 'sluice:JSON'",
      tags: 'Array(Nullable(String))',
      people: "Nullable(String) 'sluice:JSON'",
      note: 'Nullable(String)',
      _sluice_load: 'String',
    });
    const back = await rows(`SELECT * FROM ${DB}.${table} ORDER BY id`);
    expect(back).toEqual([
      {
        id: 'a',
        n: 1,
        score: 1.5,
        ok: 1,
        at: '2024-01-02T03:04:05.678Z',
        day: '2024-02-29',
        funding: '{"rounds":2,"last":"2020-05-06T07:08:09.000Z","kind":null}',
        tags: ['x', 'y'],
        people: '[{"name":"p1","age":30},{"name":"p2","age":null}]',
        note: null,
      },
      {
        id: 'b',
        n: null,
        score: null,
        ok: 0,
        at: null,
        day: null,
        funding: null,
        // ClickHouse has no Nullable(Array): an empty list and a missing one are both [].
        tags: [],
        people: null,
        note: 'text "quoted" é',
      },
    ]);
    // Nested records are queryable as JSON text, with the functions 18.16 has.
    expect(
      await rows(`SELECT visitParamExtractInt(funding, 'rounds') AS r FROM ${DB}.${table} WHERE id = 'a'`),
    ).toEqual([{ r: 2 }]);
    // The hidden column: what load attached each row, not shown by SELECT *.
    expect((await rows(`SELECT DISTINCT _sluice_load AS l FROM ${DB}.${table}`))[0]!.l).toMatch(/^[0-9a-f]{24}$/);
  });

  it('escapes what TabSeparated treats specially, in text and in arrays; keeps NUL, emoji and odd names', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    const nasty = 'tab\there\nnew line\r\\N back\\slash \'q\' "dq" [a,b] NUL\0 é😀';
    await sink.writeUnit(
      unit('u1'),
      batches([
        {
          s: nasty,
          list: [nasty, null, 'NULL', ''],
          n: [1, 2, null],
          'we`ird "name"\n': 1,
          doc: { s: nasty, l: [nasty] },
        },
      ]),
      NO_CHECKPOINT,
    );
    const [back] = await rows(`SELECT * FROM ${DB}.${table}`);
    expect({ ...back, doc: JSON.parse(back!.doc as string) as unknown }).toEqual({
      s: nasty,
      list: [nasty, null, 'NULL', ''],
      n: [1, 2, null],
      'we`ird "name"\n': 1,
      doc: { s: nasty, l: [nasty] },
    });
  });

  it('commits a unit once: again in the same run or in a rerun it is a no-op', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    expect((await sink.writeUnit(unit('u1'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT)).committed).toBe(true);
    expect(await sink.writeUnit(unit('u1'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    const { sink: rerun } = await openSink({ table });
    expect(await rerun.committedUnits()).toEqual(new Set(['run1/u1']));
    expect(await rerun.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    expect(await rows(`SELECT count() AS n FROM ${DB}.${table}`)).toEqual([{ n: 2 }]);
    expect(await sideTables(table)).toEqual([]);
  });

  it('shows nothing of a unit stopped before its ATTACH, or whose source breaks mid-unit, and loads it again', async () => {
    const table = freshTable();
    const disarm = armed('clickhouse:after-intent', ({ unit: id }) => {
      if (id?.endsWith('boom')) throw new Error('crash before the attach');
    });
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('ok'), batches([{ id: 1 }]), NO_CHECKPOINT);
    await expect(
      sink.writeUnit(unit('boom'), batches([{ id: 2 }, { id: 3 }]), knownCheckpoint({ max: 3 })),
    ).rejects.toThrow(/crash before the attach/);
    const broken = await sink
      .writeUnit(unit('broken'), failingBatches([{ id: 4 }]), NO_CHECKPOINT)
      .catch((e: unknown) => e);
    // The source's own error, not a sink failure: whether the unit is tried again is the source's to say.
    expect(broken).toBeInstanceOf(Error);
    expect(broken).not.toBeInstanceOf(SluiceError);
    expect((broken as Error).message).toBe('source broke mid-unit');
    expect(await rows(`SELECT id FROM ${DB}.${table}`)).toEqual([{ id: 1 }]);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/ok']));
    disarm();
    // The rerun settles the unit left `publishing` (its load is not in the table): not committed, loaded again.
    const { sink: rerun } = await openSink({ table });
    expect(await rerun.committedCheckpoints()).toEqual(new Map());
    expect(await rerun.writeUnit(unit('boom'), batches([{ id: 2 }, { id: 3 }]), NO_CHECKPOINT)).toMatchObject({
      committed: true,
      records: 2,
    });
    expect(await rows(`SELECT id FROM ${DB}.${table} ORDER BY id`)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(await sideTables(table)).toEqual([]);
  });

  it('a unit stopped between its ATTACH and its state row is committed by the next open, with its checkpoint, once', async () => {
    const table = freshTable();
    const disarm = armed('clickhouse:after-attach', failWith('crash after the attach'));
    const { sink } = await openSink({ table });
    await expect(
      sink.writeUnit(unit('u1'), batches([{ id: 1 }, { id: 2 }]), knownCheckpoint({ max: 2 })),
    ).rejects.toThrow(/crash after the attach/);
    disarm();
    // Readers see the unit whole already: its rows are in the table.
    expect(await rows(`SELECT count() AS n FROM ${DB}.${table}`)).toEqual([{ n: 2 }]);
    const { sink: rerun } = await openSink({ table });
    expect(await rerun.committedUnits()).toEqual(new Set(['run1/u1']));
    expect(await rerun.committedCheckpoints()).toEqual(new Map([['run1/u1', { max: 2 }]]));
    expect(await rerun.writeUnit(unit('u1'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    expect(await rows(`SELECT count() AS n FROM ${DB}.${table}`)).toEqual([{ n: 2 }]);
    expect(await sideTables(table)).toEqual([]);
  });

  it('the same, found by the unit’s next attempt in the same run (a lost answer to the ATTACH)', async () => {
    const table = freshTable();
    let failOnce = true;
    armed('clickhouse:after-attach', () => {
      if (!failOnce) return;
      failOnce = false;
      throw new Error('the answer was lost');
    });
    const { sink } = await openSink({ table });
    await expect(sink.writeUnit(unit('u1'), batches([{ id: 1 }]), knownCheckpoint({ max: 1 }))).rejects.toThrow();
    expect(await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), knownCheckpoint({ max: 1 }))).toEqual({
      committed: false,
      records: 0,
    });
    expect(await sink.committedCheckpoints()).toEqual(new Map([['run1/u1', { max: 1 }]]));
    expect(await rows(`SELECT count() AS n FROM ${DB}.${table}`)).toEqual([{ n: 1 }]);
  });
});

describe.skipIf(!available)('clickhouse sink: schema', () => {
  it('creates every declared column from the first unit, in order, even those no row fills; at finish without rows', async () => {
    const table = freshTable();
    const declared: DeclaredSchema = [
      { name: 'id', type: BIGINT, nullable: false, description: 'id' },
      { name: 'name', type: VARCHAR, nullable: true, description: 'name' },
      { name: 'updated_at', type: TIMESTAMP, nullable: true, description: 'when' },
      { name: 'tags', type: listOf(VARCHAR), nullable: true, description: 'tags' },
    ];
    const { sink } = await openSink({ table }, { declared });
    await sink.writeUnit(unit('u1'), batches([{ extra: true, id: 1 }]), NO_CHECKPOINT);
    expect(Object.keys(await columnTypes(table))).toEqual([
      'id',
      'name',
      'updated_at',
      'tags',
      'extra',
      '_sluice_load',
    ]);
    const empty = freshTable();
    const { sink: none } = await openSink({ table: empty }, { declared });
    await none.finish();
    expect(Object.keys(await columnTypes(empty))).toEqual(['id', 'name', 'updated_at', 'tags', '_sluice_load']);
  });

  it('adds columns and widens types in place, reports them, and reads its columns back as logical types', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    await sink.writeUnit(
      unit('u1'),
      batches([{ id: 1, n: 1, day: '2024-01-02', tags: [1, 2], ok: true }]),
      NO_CHECKPOINT,
    );
    const r = await sink.writeUnit(
      unit('u2'),
      batches([
        { id: 2, n: 2.5, day: '2024-01-03T04:05:06Z', tags: [1.5], extra: 'x', odd: 1 },
        { id: 4, odd: 'x' },
      ]),
      NO_CHECKPOINT,
    );
    expect(r.schemaChanges).toEqual([
      { column: 'n', change: 'widened', from: 'Nullable(Int64)', to: 'Nullable(Float64)' },
      {
        column: 'day',
        change: 'widened',
        from: "Nullable(String) COMMENT 'sluice:DATE'",
        to: "Nullable(String) COMMENT 'sluice:TIMESTAMP'",
      },
      { column: 'tags', change: 'widened', from: 'Array(Nullable(Int64))', to: 'Array(Nullable(Float64))' },
      { column: 'extra', change: 'added', to: 'Nullable(String)' },
      { column: 'odd', change: 'added', to: 'Nullable(String)' },
    ]);
    const r3 = await sink.writeUnit(unit('u3'), batches([{ id: 3, n: { nested: true } }]), NO_CHECKPOINT);
    expect(r3.schemaChanges).toEqual([
      { column: 'n', change: 'widened', from: 'Nullable(Float64)', to: "Nullable(String) COMMENT 'sluice:JSON'" },
    ]);
    expect(await rows(`SELECT id, n, day, tags FROM ${DB}.${table} ORDER BY id`)).toEqual([
      { id: 1, n: '1', day: '2024-01-02', tags: [1, 2] },
      { id: 2, n: '2.5', day: '2024-01-03T04:05:06.000Z', tags: [1.5] },
      { id: 3, n: '{"nested":true}', day: null, tags: [] },
      { id: 4, n: null, day: null, tags: [] },
    ]);
    const cols = await sink.currentColumns();
    expect(cols && Object.fromEntries(cols)).toEqual({
      id: BIGINT,
      n: JSON_TYPE,
      day: TIMESTAMP,
      tags: listOf(DOUBLE),
      ok: BOOLEAN,
      extra: VARCHAR,
      odd: VARCHAR,
    });
    expect(sink.typeName(listOf(DATE))).toBe("Array(Nullable(String)) COMMENT 'sluice:LIST<DATE>'");
  });

  it('a unit whose later batches need new or wider columns keeps every row, in order', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('u0'), batches([{ id: 0, n: 0, tags: ['z'], s: 'y' }]), NO_CHECKPOINT);
    const r = await sink.writeUnit(
      unit('u1'),
      batches(
        [
          { id: 1, n: 1, tags: ['a'], s: 'x' },
          { id: 2, n: 2, tags: null, s: 'tab\there' },
        ],
        [{ id: 3, n: 3 }],
        [{ id: 4, n: 4.5, tags: [{ deep: 1 }], s: { o: 1 }, extra: true }],
        [{ id: 5, n: 5, extra: false }],
      ),
      NO_CHECKPOINT,
    );
    expect(r.records).toBe(5);
    expect(r.schemaChanges?.map((c) => c.column)).toEqual(['n', 'tags', 's', 'extra']);
    expect(await rows(`SELECT id, n, tags, s, extra FROM ${DB}.${table} ORDER BY id`)).toEqual([
      // Values stored before a column became JSON text keep ClickHouse's own text of them (its CAST: a list as
      // `['a']`, a text as it was), those after are JSON; the unit's own first batches were stored before.
      { id: 0, n: 0, tags: "['z']", s: 'y', extra: null },
      { id: 1, n: 1, tags: "['a']", s: 'x', extra: null },
      { id: 2, n: 2, tags: '[]', s: 'tab\there', extra: null },
      { id: 3, n: 3, tags: '[]', s: null, extra: null },
      { id: 4, n: 4.5, tags: '[{"deep":1}]', s: '{"o":1}', extra: 1 },
      { id: 5, n: 5, tags: null, s: null, extra: 0 },
    ]);
  });

  it('two sinks (as two shard processes) loading and evolving one table at once lose nothing', async () => {
    const table = freshTable();
    const a = (await openSink({ table })).sink;
    const b = (await openSink({ table })).sink;
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      const sink = i % 2 === 0 ? a : b;
      const batch: Batch = Array.from({ length: 50 }, (_, k) => ({
        id: i * 100 + k,
        [`c${i % 4}`]: i % 3 === 0 ? 1.5 : 1,
      }));
      work.push(sink.writeUnit(unit(`u${i}`), batches(batch), NO_CHECKPOINT));
    }
    await Promise.all(work);
    expect(await rows(`SELECT uniqExact(id) AS n, count() AS c FROM ${DB}.${table}`)).toEqual([{ n: 600, c: 600 }]);
    expect(Object.keys(await columnTypes(table)).sort()).toEqual(['_sluice_load', 'c0', 'c1', 'c2', 'c3', 'id']);
  });
});
