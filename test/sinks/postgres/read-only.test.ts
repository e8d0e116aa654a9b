/**
 * The postgres sink's `queryable()` runs what checks ask read-only, enforced by the server (sinks/postgres/
 * read-only.ts): a second statement and a write are refused; what a read-only transaction still lets a query do
 * does not outlive it (a large object is rolled back, a session's advisory lock released).
 */
import { describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { QueryRefused } from '../../../src/core/errors.js';
import { batches } from '../helpers.js';
import { DB, postgresSinkHarness, unit } from './harness.js';

const h = postgresSinkHarness();

describe('postgres queryable', () => {
  it('refuses a second statement and a write; leaves no lock or object behind', async () => {
    const table = h.freshTable();
    const { sink } = await h.openSink({ table });
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT);
    await sink.finish();
    const out = await sink.queryable();
    const refused = (sql: string) =>
      out.query(sql).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(await out.query(`SELECT count(*)::int AS n FROM ${out.relation}`)).toEqual([{ n: 2 }]);
    const twice = await refused(`SELECT 1; DELETE FROM ${out.relation}`);
    expect(twice).toBeInstanceOf(QueryRefused);
    expect(twice!.message).toMatch(/more than one statement/);
    const write = await refused(`DELETE FROM ${out.relation}`);
    expect(write).toBeInstanceOf(QueryRefused);
    expect(write!.message).toMatch(/^refused: it writes \(cannot execute DELETE in a read-only transaction\)/);
    // A plain mistake is not a refusal.
    expect(await refused(`SELECT nope FROM ${out.relation}`)).not.toBeInstanceOf(QueryRefused);

    await out.query(`SELECT pg_advisory_lock(4242), lo_create(0)`);
    const locks = await h.server.query(DB, `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`);
    expect(locks).toEqual([{ n: 0 }]);
    expect(await h.server.query(DB, 'SELECT count(*)::int AS n FROM pg_largeobject_metadata')).toEqual([{ n: 0 }]);
    expect(await h.rows(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: 2 }]);
    await out.close();
  });
});
