/**
 * CopyWriter against a real server (test/support/postgres-server.ts): a unit of many chunks — more than the writer
 * keeps queued for the socket, so it has to wait for the server and resume — arrives whole and in order, with its
 * spool holding exactly the bytes sent; a COPY the server refuses while chunks are still queued fails the write
 * with the server's error instead of hanging or crashing the process; unstorable rows go to dead letters.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Row } from '../../../src/core/types.js';
import { BIGINT, VARCHAR } from '../../../src/core/logical-type.js';
import { CopyWriter, Spool, SpoolPool, copySpool } from '../../../sinks/postgres/copy.js';
import { RowEncoder } from '../../../sinks/postgres/encode.js';
import { hasPostgres, type PostgresServer, startPostgres } from '../../support/postgres-server.js';

const DB = 'copy_test';
let server: PostgresServer;
let pool: pg.Pool;
beforeAll(async () => {
  server = await startPostgres();
  await server.createDatabase(DB);
  pool = new pg.Pool({ connectionString: server.socketUrl(DB), max: 2 });
}, 120_000);
afterAll(async () => {
  await pool?.end();
  server?.stop();
});

const TYPES = new Map([
  ['n', BIGINT],
  ['s', VARCHAR],
]);
const COLUMNS = [...TYPES.keys()];

/** ~800-byte rows: 4,000 of them are ~12 chunks of COPY text, three times what the writer queues. */
function rows(from: number, count: number): Row[] {
  return Array.from({ length: count }, (_, i) => ({ n: from + i, s: `row ${from + i} `.repeat(90) }));
}

async function withClient<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    return await fn(c);
  } finally {
    c.release();
  }
}

describe.skipIf(!hasPostgres())('CopyWriter', () => {
  it('streams a unit of many chunks whole and in order, the spool holding the bytes sent', async () => {
    await server.query(DB, 'CREATE TABLE many (n bigint, s text)');
    const spool = new Spool();
    try {
      const dead: Row[] = [];
      const stored = await withClient(async (c) => {
        const w = new CopyWriter(c, 'many', COLUMNS, new RowEncoder(COLUMNS, TYPES), (r) => dead.push(r), spool);
        for (let b = 0; b < 40; b++) await w.write(rows(b * 100, 100));
        return w.end();
      });
      expect(stored).toBe(4000);
      expect(dead).toEqual([]);
      const [r] = await server.query(
        DB,
        'SELECT count(*)::int AS n, bool_and(s = repeat($$row $$ || n || $$ $$, 90)) AS ok FROM many',
      );
      expect(r).toEqual({ n: 4000, ok: true });
      // The spool's text loads the same rows again (what a unit's retry after a schema change does).
      await server.query(DB, 'CREATE TABLE again (n bigint, s text)');
      expect(spool.bytes).toBeGreaterThan(2 * 2 ** 20);
      expect(await withClient((c) => copySpool(c, 'again', COLUMNS, spool))).toBe(4000);
      const [diff] = await server.query(
        DB,
        'SELECT count(*)::int AS n FROM (SELECT * FROM many EXCEPT SELECT * FROM again) d',
      );
      expect(diff).toEqual({ n: 0 });
    } finally {
      spool.remove();
    }
  });

  it('hands a finished unit’s spool to the next unit, which reads back only its own bytes', async () => {
    await server.query(DB, 'CREATE TABLE first_unit (n bigint, s text)');
    await server.query(DB, 'CREATE TABLE second_unit (n bigint, s text)');
    await server.query(DB, 'CREATE TABLE second_again (n bigint, s text)');
    const spools = new SpoolPool();
    const copy = async (table: string, spool: Spool, batch: Row[]): Promise<number> =>
      withClient(async (c) => {
        const w = new CopyWriter(c, table, COLUMNS, new RowEncoder(COLUMNS, TYPES), () => undefined, spool);
        await w.write(batch);
        return w.end();
      });
    try {
      const first = spools.take();
      expect(await copy('first_unit', first, rows(0, 1000))).toBe(1000);
      const longer = first.bytes;
      spools.give(first);
      // The next unit gets the same file back, shorter this time: what it wrote is all that is read back.
      const second = spools.take();
      expect(second).toBe(first);
      expect(second.bytes).toBe(0);
      expect(await copy('second_unit', second, rows(5000, 10))).toBe(10);
      expect(second.bytes).toBeLessThan(longer / 50);
      expect(await withClient((c) => copySpool(c, 'second_again', COLUMNS, second))).toBe(10);
      const [r] = await server.query(
        DB,
        'SELECT min(n)::int AS lo, max(n)::int AS hi, count(*)::int AS n FROM second_again',
      );
      expect(r).toEqual({ lo: 5000, hi: 5009, n: 10 });
      spools.give(second);
    } finally {
      spools.close();
    }
  });

  it('fails with the server’s error when the server refuses a row while chunks are still queued', async () => {
    await server.query(DB, 'CREATE TABLE checked (n bigint CHECK (n < 500), s text)');
    const err = await withClient(async (c) => {
      await c.query('BEGIN');
      const w = new CopyWriter(c, 'checked', COLUMNS, new RowEncoder(COLUMNS, TYPES), () => undefined);
      try {
        for (let b = 0; b < 40; b++) await w.write(rows(b * 100, 100));
        await w.end();
        return undefined;
      } catch (e) {
        w.abort(e);
        return e as Error & { code?: string };
      } finally {
        await c.query('ROLLBACK');
      }
    });
    expect(err?.code).toBe('23514');
    // The connection is usable again, and nothing was stored.
    const [r] = await server.query(DB, 'SELECT count(*)::int AS n FROM checked');
    expect(r).toEqual({ n: 0 });
  });

  it('sends a row Postgres cannot store to dead letters and the others to the table', async () => {
    await server.query(DB, 'CREATE TABLE nul (n bigint, s text)');
    const dead: [Row, string][] = [];
    const stored = await withClient(async (c) => {
      const w = new CopyWriter(c, 'nul', COLUMNS, new RowEncoder(COLUMNS, TYPES), (r, why) => dead.push([r, why]));
      await w.write([
        { n: 1, s: 'ok' },
        { n: 2, s: 'a\0b' },
        { n: 3, s: 'ok too' },
      ]);
      return w.end();
    });
    expect(stored).toBe(2);
    expect(dead).toEqual([[{ n: 2, s: 'a\0b' }, expect.stringContaining('NUL')]]);
  });
});
