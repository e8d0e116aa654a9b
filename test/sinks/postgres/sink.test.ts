/**
 * The postgres sink against a real server (a throwaway cluster, test/support/postgres-server.ts): each write mode,
 * exactly-once commits with their checkpoints, declared columns, schema evolution, concurrent writers, the libpq
 * environment, and a password that never shows.
 */
import { describe, expect, it } from 'vitest';
import { knownCheckpoint, NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { SluiceError } from '../../../src/core/errors.js';
import type { Batch } from '../../../src/core/types.js';
import type { DeclaredSchema } from '../../../src/core/declared.js';
import { BIGINT, DOUBLE, JSON_TYPE, TIMESTAMP, VARCHAR, listOf } from '../../../src/core/logical-type.js';
import { postgresSinkSchema } from '../../../sinks/postgres/config.js';
import { PostgresSink } from '../../../sinks/postgres/sink.js';
import { hasPostgres, PG_PASSWORD } from '../../support/postgres-server.js';
import { batches, failingBatches, RICH_BACK, richRows, sinkContext } from '../helpers.js';
import { DB, postgresSinkHarness, unit } from './harness.js';
import { armed } from '../../support/failpoints.js';

const pg = postgresSinkHarness();
const { freshTable, openSink, rows, columnTypes } = pg;

describe.skipIf(!hasPostgres())('postgres sink: append', () => {
  it('creates the table with Postgres types and stores every kind of value as it was', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    const r = await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT);
    expect(r).toMatchObject({ committed: true, records: 2 });
    expect(await columnTypes(table)).toEqual({
      id: 'text',
      n: 'bigint',
      score: 'double precision',
      ok: 'boolean',
      at: 'timestamp with time zone',
      day: 'date',
      funding: 'jsonb',
      tags: 'text[]',
      people: 'jsonb',
      note: 'text',
    });
    const back = await rows(
      `SELECT id, n::int AS n, score, ok, at, day::text AS day, funding, tags, people, note FROM ${table} ORDER BY id`,
    );
    expect(back).toEqual([
      // The date read back as text; jsonb keeps a field that is null.
      { ...RICH_BACK[0], day: '2024-02-29', funding: { ...RICH_BACK[0]!.funding, kind: null } },
      RICH_BACK[1],
    ]);
  });

  it('escapes what COPY text format treats specially, in text and in arrays', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    const nasty = 'tab\there\nnew line\r\\N back\\slash "q" {a,b} \\.';
    await sink.writeUnit(
      unit('u1'),
      batches([{ s: nasty, list: [nasty, null, 'NULL', ''], n: [1, 2, null] }]),
      NO_CHECKPOINT,
    );
    const back = await rows(`SELECT s, list, n::int[] AS n FROM ${table}`);
    expect(back).toEqual([{ s: nasty, list: [nasty, null, 'NULL', ''], n: [1, 2, null] }]);
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
    expect(await rows(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: 2 }]);
  });

  it('commits nothing of a unit that fails after its rows went in, or whose source breaks mid-unit', async () => {
    const table = freshTable();
    armed('postgres:after-data', ({ unit: id }) => {
      if (id?.endsWith('boom')) throw new Error('crash before the checkpoint');
    });
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('ok'), batches([{ id: 1 }]), NO_CHECKPOINT);
    await expect(sink.writeUnit(unit('boom'), batches([{ id: 2 }, { id: 3 }]), NO_CHECKPOINT)).rejects.toThrow(
      /crash before/,
    );
    const broken = await sink
      .writeUnit(unit('broken'), failingBatches([{ id: 4 }]), NO_CHECKPOINT)
      .catch((e: unknown) => e);
    // The source's own error, not a sink failure: whether the unit is tried again is the source's to say.
    expect(broken).toBeInstanceOf(Error);
    expect(broken).not.toBeInstanceOf(SluiceError);
    expect((broken as Error).message).toBe('source broke mid-unit');
    expect(await rows(`SELECT id::int AS id FROM ${table}`)).toEqual([{ id: 1 }]);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/ok']));
  });

  it('sends a row Postgres cannot store (NUL in text) to the dead letters and commits the others', async () => {
    const table = freshTable();
    const { sink, letters } = await openSink({ table });
    const r = await sink.writeUnit(
      unit('u1'),
      batches([
        { id: 1, s: 'ok' },
        { id: 2, s: 'a\0b' },
      ]),
      NO_CHECKPOINT,
    );
    expect(r.records).toBe(1);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ unit: 'run1/u1', stage: 'sink:postgres' });
    expect(letters[0]!.reason).toMatch(/NUL/);
  });
});

describe.skipIf(!hasPostgres())('postgres sink: schema', () => {
  it('creates every declared column from the first unit, in order, even those no row fills', async () => {
    const table = freshTable();
    const declared: DeclaredSchema = [
      { name: 'id', type: BIGINT, nullable: false, description: 'id' },
      { name: 'name', type: VARCHAR, nullable: true, description: 'name' },
      { name: 'updated_at', type: TIMESTAMP, nullable: true, description: 'when' },
      { name: 'tags', type: listOf(VARCHAR), nullable: true, description: 'tags' },
    ];
    const { sink } = await openSink({ table }, { declared });
    await sink.writeUnit(unit('u1'), batches([{ extra: true, id: 1 }]), NO_CHECKPOINT);
    expect(await columnTypes(table)).toEqual({
      id: 'bigint',
      name: 'text',
      updated_at: 'timestamp with time zone',
      tags: 'text[]',
      extra: 'boolean',
    });
  });

  it('a run without rows still creates the declared table at finish', async () => {
    const table = freshTable();
    const declared: DeclaredSchema = [{ name: 'id', type: BIGINT, nullable: false, description: 'id' }];
    const { sink } = await openSink({ table }, { declared });
    await sink.finish();
    expect(await columnTypes(table)).toEqual({ id: 'bigint' });
  });

  it('adds columns and widens types in place, reports them, and reads its columns back as logical types', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('u1'), batches([{ id: 1, n: 1, day: '2024-01-02', tags: [1, 2] }]), NO_CHECKPOINT);
    const r = await sink.writeUnit(
      unit('u2'),
      batches([
        { id: 2, n: 2.5, day: '2024-01-03T04:05:06Z', tags: [1.5], extra: 'x', odd: 1 },
        { id: 4, odd: 'x' },
      ]),
      NO_CHECKPOINT,
    );
    expect(r.schemaChanges).toEqual([
      { column: 'n', change: 'widened', from: 'bigint', to: 'double precision' },
      { column: 'day', change: 'widened', from: 'date', to: 'timestamptz' },
      { column: 'tags', change: 'widened', from: 'bigint[]', to: 'double precision[]' },
      { column: 'extra', change: 'added', to: 'text' },
      { column: 'odd', change: 'added', to: 'text' },
    ]);
    const r3 = await sink.writeUnit(unit('u3'), batches([{ id: 3, n: { nested: true } }]), NO_CHECKPOINT);
    expect(r3.schemaChanges).toEqual([{ column: 'n', change: 'widened', from: 'double precision', to: 'jsonb' }]);
    expect(await rows(`SELECT id::int AS id, n, day, tags FROM ${table} ORDER BY id`)).toEqual([
      { id: 1, n: 1, day: '2024-01-02T00:00:00.000Z', tags: [1, 2] },
      { id: 2, n: 2.5, day: '2024-01-03T04:05:06.000Z', tags: [1.5] },
      { id: 3, n: { nested: true }, day: null, tags: null },
      { id: 4, n: null, day: null, tags: null },
    ]);
    const cols = await sink.currentColumns();
    expect(cols && Object.fromEntries(cols)).toEqual({
      id: BIGINT,
      n: JSON_TYPE,
      day: TIMESTAMP,
      tags: listOf(DOUBLE),
      extra: VARCHAR,
      odd: VARCHAR,
    });
    expect(sink.typeName(listOf(TIMESTAMP))).toBe('timestamptz[]');
  });

  it('a unit whose later batches need new or wider columns keeps every row, in order, converted as the table was', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
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
    expect(r.schemaChanges).toEqual([
      { column: 'n', change: 'widened', from: 'bigint', to: 'double precision' },
      { column: 'tags', change: 'widened', from: 'text[]', to: 'jsonb' },
      { column: 's', change: 'widened', from: 'text', to: 'jsonb' },
      { column: 'extra', change: 'added', to: 'boolean' },
    ]);
    expect(await rows(`SELECT id::int AS id, n, tags, s, extra FROM ${table} ORDER BY id`)).toEqual([
      { id: 1, n: 1, tags: ['a'], s: 'x', extra: null },
      { id: 2, n: 2, tags: null, s: 'tab\there', extra: null },
      { id: 3, n: 3, tags: null, s: null, extra: null },
      { id: 4, n: 4.5, tags: [{ deep: 1 }], s: { o: 1 }, extra: true },
      { id: 5, n: 5, tags: null, s: null, extra: false },
    ]);
    expect(await rows(`SELECT records::int AS n FROM _sluice_state WHERE table_name = 'public.${table}'`)).toEqual([
      { n: 5 },
    ]);
  });

  it('merge: a unit that needs the table changed mid-unit still lets its last row for a key win', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table, write: 'merge', primary_key: ['id'] });
    await sink.writeUnit(
      unit('u1'),
      batches(
        [
          { id: 1, v: 'first' },
          { id: 2, v: 'two' },
        ],
        [{ id: 1, v: 'second', more: 1 }],
        [{ id: 1, v: 'last' }],
      ),
      NO_CHECKPOINT,
    );
    expect(await rows(`SELECT id::int AS id, v, more::int AS more FROM ${table} ORDER BY id`)).toEqual([
      { id: 1, v: 'last', more: null },
      { id: 2, v: 'two', more: null },
    ]);
  });

  it('two sinks (as two shard processes) loading and evolving one table at once lose nothing and never deadlock', async () => {
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
    expect(await rows(`SELECT count(DISTINCT id)::int AS n FROM ${table}`)).toEqual([{ n: 600 }]);
    expect(Object.keys(await columnTypes(table)).sort()).toEqual(['c0', 'c1', 'c2', 'c3', 'id']);
  });
});

describe.skipIf(!hasPostgres())('postgres sink: merge and replace', () => {
  it('merge upserts on the key; within a unit the last row for a key wins; null keys match each other', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table, write: 'merge', primary_key: ['id'] });
    await sink.writeUnit(
      unit('u1'),
      batches([
        { id: 1, v: 'a', w: 1 },
        { id: 2, v: 'b', w: 2 },
        { id: null, v: 'n1' },
      ]),
      NO_CHECKPOINT,
    );
    const r = await sink.writeUnit(
      unit('u2'),
      batches(
        [
          { id: 2, v: 'b1' },
          { id: 3, v: 'c' },
        ],
        [
          { id: 2, v: 'b2' },
          { id: null, v: 'n2' },
        ],
      ),
      NO_CHECKPOINT,
    );
    expect(r).toMatchObject({ committed: true, records: 4 });
    expect(await rows(`SELECT id::int AS id, v, w::int AS w FROM ${table} ORDER BY id NULLS FIRST`)).toEqual([
      { id: null, v: 'n2', w: null },
      { id: 1, v: 'a', w: 1 },
      { id: 2, v: 'b2', w: null },
      { id: 3, v: 'c', w: null },
    ]);
  });

  it('merge refuses data without the key column before writing anything', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table, write: 'merge', primary_key: ['id'] });
    const err = await sink.writeUnit(unit('u1'), batches([{ other: 1 }]), NO_CHECKPOINT).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as Error).message).toMatch(/primary key column "id" is not in the data/);
  });

  it('replace leaves the old table to readers until finish, then swaps the new one in with its checkpoints', async () => {
    const table = freshTable();
    const first = (await openSink({ table, write: 'replace' }, { fresh: true })).sink;
    await first.writeUnit(unit('a'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT);
    await first.finish();
    const second = (await openSink({ table, write: 'replace' })).sink;
    await second.writeUnit({ id: 'run2/b', params: {} }, batches([{ id: 3, extra: 'x' }]), NO_CHECKPOINT);
    expect(await rows(`SELECT id::int AS id FROM ${table} ORDER BY id`)).toEqual([{ id: 1 }, { id: 2 }]);
    await second.finish();
    expect(await rows(`SELECT id::int AS id, extra FROM ${table}`)).toEqual([{ id: 3, extra: 'x' }]);
    expect(
      await rows(`SELECT table_name, unit_id FROM _sluice_state WHERE table_name LIKE 'public.${table}%' ORDER BY 1`),
    ).toEqual([{ table_name: `public.${table}`, unit_id: 'run2/b' }]);
    expect(await rows(`SELECT to_regclass('${table}__sluice_next') IS NULL AS gone`)).toEqual([{ gone: true }]);
  });

  it('drop (`sluice state drop`) removes the table and its checkpoints together, and no other table’s', async () => {
    const [table, other] = [freshTable(), freshTable()];
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('a'), batches([{ id: 1 }]), knownCheckpoint({ cursor: 'ts', max: 5 }));
    await (await openSink({ table: other })).sink.writeUnit(unit('a'), batches([{ id: 2 }]), NO_CHECKPOINT);
    expect(await sink.drop()).toEqual([`table public.${table}`, 'its rows in public._sluice_state']);
    expect(await rows(`SELECT to_regclass('${table}') IS NULL AS gone`)).toEqual([{ gone: true }]);
    expect(await sink.committedCheckpoints()).toEqual(new Map());
    expect(
      await rows(`SELECT table_name FROM _sluice_state WHERE table_name IN ('public.${table}', 'public.${other}')`),
    ).toEqual([{ table_name: `public.${other}` }]);
  });
});

describe.skipIf(!hasPostgres())('postgres sink: connection', () => {
  it('takes the libpq environment when there is no url', async () => {
    const table = freshTable();
    const saved = { ...process.env };
    Object.assign(process.env, {
      PGHOST: pg.server.socketDir,
      PGPORT: String(pg.server.port),
      PGUSER: 'sluice',
      PGDATABASE: DB,
    });
    try {
      const sink = new PostgresSink(postgresSinkSchema.parse({ type: 'postgres', table }));
      pg.closeAfter(sink);
      expect(sink.describe()).toBe(
        `postgres ${pg.server.socketDir} (socket):${pg.server.port}/${DB} table public.${table}`,
      );
      await sink.open(sinkContext('/nowhere'));
      await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
      expect(await rows(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: 1 }]);
    } finally {
      for (const k of ['PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE']) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it('never shows the password: not in describe(), log lines, errors or their hints', async () => {
    const table = freshTable();
    const { sink, ctx } = await openSink({ table, url: pg.server.url(DB) });
    expect(sink.describe()).toBe(`postgres 127.0.0.1:${pg.server.port}/${DB} table public.${table}`);
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    // A wrong database, and a wrong password that differs from the right one only at its end.
    const texts: string[] = [sink.describe(), ...ctx.logs];
    for (const url of [pg.server.url('no_such_db'), pg.server.url(DB).replace(PG_PASSWORD, `${PG_PASSWORD}x`)]) {
      const bad = new PostgresSink(postgresSinkSchema.parse({ type: 'postgres', url, table }));
      const err = await bad.open(sinkContext('/nowhere')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SluiceError);
      const e = err as SluiceError;
      expect(e.message).toMatch(/cannot connect to 127\.0\.0\.1:\d+\/\w+/);
      expect(e.hint).toBeTruthy();
      texts.push(bad.describe(), e.message, e.hint ?? '', String(e.stack));
    }
    for (const t of texts) expect(t).not.toContain(PG_PASSWORD);
  });
});
