/**
 * The clickhouse sink's `merge` and `replace` against a real server (Debian's 18.16), `sluice state drop`, the
 * read-only queries of checks, and where it connects: its name, a wrong password, a server that is not there.
 * (Appends, the steps of a unit's commit, the schema: sink.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { knownCheckpoint, NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { SluiceError } from '../../../src/core/errors.js';
import { isTransient } from '../../../src/core/retry.js';
import { CH_PASSWORD } from '../../support/clickhouse-server.js';
import { batches, sinkContext } from '../helpers.js';
import { available, clickhouseSinkHarness, DB, unit } from './harness.js';

const ch = clickhouseSinkHarness();
const { freshTable, openSink, rows, columnTypes, sideTables } = ch;

describe.skipIf(!available)('clickhouse sink: merge and replace', () => {
  it('merge upserts on the key (read with FINAL); within a unit, even one changed mid-unit, the last row wins', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table, write: 'merge', primary_key: ['id'] });
    await sink.writeUnit(
      unit('u1'),
      batches(
        [
          { id: 1, v: 'a', w: 1 },
          { id: 2, v: 'b', w: 2 },
        ],
        [{ id: 1, v: 'a2', more: 1 }],
        [{ id: 1, v: 'a3' }],
      ),
      NO_CHECKPOINT,
    );
    const r = await sink.writeUnit(
      unit('u2'),
      batches(
        [
          { id: 2, v: 'b1' },
          { id: 3, v: 'c' },
        ],
        [{ id: 2, v: 'b2' }],
      ),
      NO_CHECKPOINT,
    );
    expect(r).toMatchObject({ committed: true, records: 3 });
    expect(await rows(`SELECT id, v, w, more FROM ${DB}.${table} FINAL ORDER BY id`)).toEqual([
      { id: 1, v: 'a3', w: null, more: null },
      { id: 2, v: 'b2', w: null, more: null },
      { id: 3, v: 'c', w: null, more: null },
    ]);
    // The key is the table's ORDER BY, so it is not Nullable.
    expect((await columnTypes(table)).id).toBe('Int64');
    const q = await sink.queryable();
    expect(await q.query(`SELECT count() AS n FROM ${q.relation} t`)).toEqual([{ n: 3 }]);
  });

  it('merge refuses data without the key column before writing anything', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table, write: 'merge', primary_key: ['id'] });
    const err = await sink.writeUnit(unit('u1'), batches([{ other: 1 }]), NO_CHECKPOINT).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as Error).message).toMatch(/primary key column "id" is not in the data/);
  });

  it('replace leaves the old table to readers until finish, then renames the new one in with its checkpoints', async () => {
    const table = freshTable();
    const first = (await openSink({ table, write: 'replace' }, { fresh: true, runId: 'run1' })).sink;
    await first.writeUnit(unit('a'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT);
    await first.finish();
    const second = (await openSink({ table, write: 'replace' }, { fresh: true, runId: 'run2' })).sink;
    await second.writeUnit({ id: 'run2/b', params: {} }, batches([{ id: 3, extra: 'x' }]), knownCheckpoint({ m: 3 }));
    expect(await rows(`SELECT id FROM ${DB}.${table} ORDER BY id`)).toEqual([{ id: 1 }, { id: 2 }]);
    expect(await second.committedCheckpoints()).toEqual(new Map([['run2/b', { m: 3 }]]));
    await second.finish();
    expect(await rows(`SELECT id, extra FROM ${DB}.${table}`)).toEqual([{ id: 3, extra: 'x' }]);
    expect(
      await rows(
        `SELECT table_name, unit_id FROM ${DB}._sluice_state WHERE startsWith(table_name, '${DB}.${table}')
          ORDER BY version DESC LIMIT 1 BY table_name, unit_id`,
      ).then((r) => r.length),
    ).toBeGreaterThan(0);
    const { sink: after } = await openSink({ table, write: 'replace' }, { runId: 'run3' });
    expect(await after.committedCheckpoints()).toEqual(new Map());
    expect(await sideTables(table)).toEqual([]);
  });

  it('replace: readers querying through the swap see the old table or the new, never neither', async () => {
    const table = freshTable();
    const first = (await openSink({ table, write: 'replace' }, { fresh: true, runId: 'o1' })).sink;
    await first.writeUnit({ id: 'o1/a', params: {} }, batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT);
    await first.finish();
    const second = (await openSink({ table, write: 'replace' }, { fresh: true, runId: 'o2' })).sink;
    await second.writeUnit({ id: 'o2/a', params: {} }, batches([{ id: 3 }, { id: 4 }, { id: 5 }]), NO_CHECKPOINT);
    const seen = new Set<string>();
    let swapping = true;
    const reader = async (): Promise<void> => {
      while (swapping) {
        const r = await ch.server
          .rows<{ n: number }>(`SELECT count() AS n FROM ${DB}.${table}`)
          .catch((e: Error) => [{ n: -1, error: e.message }]);
        seen.add(JSON.stringify(r[0]));
      }
    };
    const readers = [reader(), reader(), reader()];
    await second.finish();
    swapping = false;
    await Promise.all(readers);
    expect(
      [...seen].every((x) => x === '{"n":2}' || x === '{"n":3}'),
      [...seen].join(' '),
    ).toBe(true);
    expect(await rows(`SELECT count() AS n FROM ${DB}.${table}`)).toEqual([{ n: 3 }]);
  });

  it('replace: a run stopped at its swap is finished by its rerun, readers seeing the old table or the new', async () => {
    const table = freshTable();
    const first = (await openSink({ table, write: 'replace' }, { fresh: true, runId: 'r1' })).sink;
    await first.writeUnit({ id: 'r1/a', params: {} }, batches([{ id: 1 }]), NO_CHECKPOINT);
    await first.finish();
    const second = (await openSink({ table, write: 'replace' }, { fresh: true, runId: 'r2' })).sink;
    await second.writeUnit({ id: 'r2/a', params: {} }, batches([{ id: 2 }]), NO_CHECKPOINT);
    // The rerun of r2 (not fresh: the same run resumed) finds r2's units committed and swaps.
    const resumed = (await openSink({ table, write: 'replace' }, { fresh: false, runId: 'r2' })).sink;
    expect(await resumed.committedUnits()).toEqual(new Set(['r2/a']));
    expect(await rows(`SELECT id FROM ${DB}.${table}`)).toEqual([{ id: 1 }]);
    await resumed.finish();
    expect(await rows(`SELECT id FROM ${DB}.${table}`)).toEqual([{ id: 2 }]);
  });

  it('drop (`sluice state drop`) removes the table and its checkpoints together, and no other table’s', async () => {
    const [table, other] = [freshTable(), freshTable()];
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('a'), batches([{ id: 1 }]), knownCheckpoint({ cursor: 'ts', max: 5 }));
    const { sink: otherSink } = await openSink({ table: other });
    await otherSink.writeUnit(unit('a'), batches([{ id: 2 }]), knownCheckpoint({ max: 1 }));
    expect(await sink.committedCheckpoints()).toEqual(new Map([['run1/a', { cursor: 'ts', max: 5 }]]));
    expect(await sink.drop()).toEqual([`table ${DB}.${table}`, `its rows in ${DB}._sluice_state`]);
    expect(await columnTypes(table)).toEqual({});
    expect(await sink.committedCheckpoints()).toEqual(new Map());
    expect(await otherSink.committedCheckpoints()).toEqual(new Map([['run1/a', { max: 1 }]]));
  });
});

describe.skipIf(!available)('clickhouse sink: reading, connecting, secrets', () => {
  it('checks query read-only: a query that writes is refused by the server', async () => {
    const table = freshTable();
    const { sink } = await openSink({ table });
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    const q = await sink.queryable();
    expect(q.dialect).toBe('clickhouse');
    expect(await q.query(`SELECT count(*) AS n FROM ${q.relation} t WHERE "id" IS NOT NULL`)).toEqual([{ n: 1 }]);
    await expect(q.query(`INSERT INTO ${q.relation} (id) VALUES (2)`)).rejects.toThrow(/readonly/i);
    await expect(q.query(`DROP TABLE ${q.relation}`)).rejects.toThrow(/readonly/i);
    expect(await rows(`SELECT count() AS n FROM ${DB}.${table}`)).toEqual([{ n: 1 }]);
  });

  it('says where it writes without the password; a wrong password or a server that is not there fails clearly', async () => {
    const sink = ch.sinkFor({ table: 'x' });
    expect(sink.describe()).toBe(`clickhouse http://127.0.0.1:${ch.server.httpPort}/${DB} table ${DB}.x`);
    const wrong = ch.sinkFor({
      table: 'x',
      url: `http://sluice:not-the-${CH_PASSWORD}@127.0.0.1:${ch.server.httpPort}`,
    });
    const err = (await wrong.open(sinkContext('/nowhere')).catch((e: unknown) => e)) as SluiceError;
    expect(err).toBeInstanceOf(SluiceError);
    expect(`${err.message} ${err.hint}`).not.toContain(CH_PASSWORD);
    expect(err.message).toMatch(/Wrong password/);
    expect(err.hint).toMatch(/user and password/);
    expect(isTransient(err)).toBe(false);
    const nowhere = ch.sinkFor({ table: 'x', url: `http://sluice:${CH_PASSWORD}@127.0.0.1:9` });
    const down = (await nowhere.open(sinkContext('/nowhere')).catch((e: unknown) => e)) as SluiceError;
    expect(down).toBeInstanceOf(SluiceError);
    expect(isTransient(down)).toBe(true);
    expect(down.message).not.toContain(CH_PASSWORD);
  });
});
