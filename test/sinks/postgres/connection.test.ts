/**
 * The postgres sink when the link to the server is cut (a real loopback proxy, test/support/tcp-proxy.ts, in front
 * of a throwaway cluster): a reset mid-COPY, before a unit's COMMIT reaches the server, and after the server
 * committed but before the client heard of it. Each failure is transient for core/retry.ts, and the unit's next
 * attempt — as the engine makes it — ends with its rows exactly once: the maybe-committed unit is found in
 * `_sluice_state` and not loaded again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { RetryPolicy, isTransient } from '../../../src/core/retry.js';
import { UNIT_ATTEMPTS } from '../../../src/unit/run-units.js';
import type { Batch, Row, WorkUnit } from '../../../src/core/types.js';
import { postgresSinkSchema } from '../../../sinks/postgres/config.js';
import { PostgresSinkError, createPool, isTransientPgError } from '../../../sinks/postgres/connection.js';
import { PostgresSink } from '../../../sinks/postgres/sink.js';
import { hasPostgres, type PostgresServer, startPostgres } from '../../support/postgres-server.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { batches, sinkContext } from '../helpers.js';

const DB = 'connection_test';
let server: PostgresServer;
let proxy: TcpProxy;
beforeAll(async () => {
  server = await startPostgres();
  await server.createDatabase(DB);
  // To the unix socket: trusted, so a reconnect costs no password exchange.
  proxy = await startTcpProxy({ target: { path: `${server.socketDir}/.s.PGSQL.${server.port}` } });
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  server?.stop();
});

const opened: PostgresSink[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

let tables = 0;
async function openSink(config: Record<string, unknown> = {}): Promise<{ sink: PostgresSink; table: string }> {
  const table = `t${++tables}`;
  const sink = new PostgresSink(
    postgresSinkSchema.parse({
      type: 'postgres',
      url: `postgres://sluice@127.0.0.1:${proxy.port}/${DB}`,
      table,
      ...config,
    }),
  );
  await sink.open(sinkContext('/nowhere', { fresh: false }));
  opened.push(sink);
  return { sink, table };
}

/** Rows enough for several CopyData messages (the sink sends ~256 KiB at a time). */
function manyRows(n: number, tag = 'a'): Row[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${tag}${i}`, n: i, text: `row ${i} `.repeat(20) }));
}

function unitOf(id: string): WorkUnit {
  return { id: `run1/${id}`, params: {} };
}

/** Two batches, so the unit's rows arrive while the COPY is open. */
function twoBatches(rows: Row[]): AsyncIterable<Batch> {
  const half = rows.length >> 1;
  return batches(rows.slice(0, half), rows.slice(half));
}

/** `attempt` tried again while it fails transiently, as unit/run-units.ts does; returns the tries it took. */
async function asTheEngine(attempt: () => Promise<unknown>): Promise<number> {
  const policy = new RetryPolicy({ attempts: UNIT_ATTEMPTS, baseMs: 1, maxMs: 10 });
  for (let n = 1; ; n++) {
    try {
      await attempt();
      return n;
    } catch (err) {
      if (!policy.shouldRetry(n, err)) throw err;
    }
  }
}

/** The engine's treatment of a failed attempt: the error must be transient for core/retry.ts, then the unit again. */
async function failsTransiently(attempt: Promise<unknown>): Promise<PostgresSinkError> {
  const err = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'the cut attempt failed').toBeInstanceOf(PostgresSinkError);
  expect(isTransient(err), String(err)).toBe(true);
  expect(String((err as Error).message)).not.toMatch(/password|undefined/i);
  return err as PostgresSinkError;
}

async function tableState(table: string): Promise<{ rows: number; ids: number; units: number }> {
  const [r] = await server.query(
    DB,
    `SELECT (SELECT count(*) FROM "${table}")::int AS rows, (SELECT count(DISTINCT id) FROM "${table}")::int AS ids,
            (SELECT count(*) FROM _sluice_state WHERE table_name LIKE '%${table}')::int AS units`,
  );
  return r as { rows: number; ids: number; units: number };
}

describe.skipIf(!hasPostgres())('postgres sink: a connection reset', () => {
  it('mid-COPY: the attempt fails transiently and commits nothing; the next attempt loads the unit once', async () => {
    const { sink, table } = await openSink();
    await sink.writeUnit(unitOf('first'), batches(manyRows(10, 'f')), NO_CHECKPOINT);
    const rows = manyRows(2000);
    proxy.cutAt('copy');
    const before = proxy.cuts.copy;
    const err = await failsTransiently(sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT));
    expect(proxy.cuts.copy - before, 'the cut came mid-COPY').toBe(1);
    expect(err.message).toContain('postgres sink');
    expect(await tableState(table)).toEqual({ rows: 10, ids: 10, units: 1 });

    expect(await sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT)).toMatchObject({
      committed: true,
      records: 2000,
    });
    expect(await tableState(table)).toEqual({ rows: 2010, ids: 2010, units: 2 });
  });

  it('before COMMIT reaches the server: nothing committed; the next attempt loads the unit once', async () => {
    const { sink, table } = await openSink();
    await sink.writeUnit(unitOf('first'), batches(manyRows(10, 'f')), NO_CHECKPOINT);
    const rows = manyRows(500);
    proxy.cutAt('query', /^COMMIT/);
    const before = proxy.cuts.query;
    await failsTransiently(sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT));
    expect(proxy.cuts.query - before).toBe(1);
    expect(await tableState(table)).toEqual({ rows: 10, ids: 10, units: 1 });

    expect(await sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT)).toMatchObject({
      committed: true,
      records: 500,
    });
    expect(await tableState(table)).toEqual({ rows: 510, ids: 510, units: 2 });
  });

  it('after N bytes of a unit’s COPY: the same, wherever in a message the cut falls', async () => {
    const { sink, table } = await openSink();
    await sink.writeUnit(unitOf('first'), batches(manyRows(10, 'f')), NO_CHECKPOINT);
    const rows = manyRows(2000);
    proxy.cutAfterBytes(150_003);
    const before = proxy.cuts.bytes;
    await failsTransiently(sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT));
    expect(proxy.cuts.bytes - before).toBe(1);
    expect(await tableState(table)).toEqual({ rows: 10, ids: 10, units: 1 });

    expect(await sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT)).toMatchObject({
      committed: true,
      records: 2000,
    });
    expect(await tableState(table)).toEqual({ rows: 2010, ids: 2010, units: 2 });
  });

  for (const write of ['append', 'merge'] as const)
    it(`after the server committed, before the client heard (${write}): the next attempt finds the unit in _sluice_state and loads nothing`, async () => {
      const { sink, table } = await openSink(write === 'merge' ? { write, primary_key: ['id'] } : {});
      await sink.writeUnit(unitOf('first'), batches(manyRows(10, 'f')), NO_CHECKPOINT);
      const rows = manyRows(1000);
      proxy.cutAt('commit');
      const before = proxy.cuts.commit;
      const err = await failsTransiently(sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT));
      expect(proxy.cuts.commit - before, 'the COMMIT’s answer was withheld').toBe(1);
      // The message does not claim what it cannot know.
      expect(err.message).toMatch(/may have committed/);
      // The server did commit: the rows and the unit's state row are there.
      expect(await tableState(table)).toEqual({ rows: 1010, ids: 1010, units: 2 });

      // The engine's next attempt: the unit is found committed, nothing is written again.
      expect(await sink.writeUnit(unitOf('u1'), twoBatches(rows), NO_CHECKPOINT)).toEqual({
        committed: false,
        records: 0,
      });
      expect(await sink.committedUnits()).toContain('run1/u1');
      expect(await tableState(table)).toEqual({ rows: 1010, ids: 1010, units: 2 });
    });

  it('every live connection cut at once (on command): the unit is loaded once, by the engine’s retry if need be', async () => {
    const { sink, table } = await openSink();
    await sink.writeUnit(unitOf('first'), batches(manyRows(10, 'f')), NO_CHECKPOINT);
    expect(proxy.cutAll()).toBeGreaterThan(0);
    // A pooled connection cut while idle fails its next query (transient) unless the pool saw it die first.
    const attempts = await asTheEngine(() => sink.writeUnit(unitOf('u1'), batches(manyRows(20)), NO_CHECKPOINT));
    expect(attempts).toBeLessThanOrEqual(2);
    expect(await tableState(table)).toEqual({ rows: 30, ids: 30, units: 2 });
  });

  it('classifies what a cut link raises as transient, and a statement’s own failure as not', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(isTransientPgError(reset)).toBe(true);
    expect(isTransientPgError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransientPgError(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBe(true);
    expect(isTransientPgError(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
    expect(isTransientPgError(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
  });
});

describe.skipIf(!hasPostgres())('postgres sink: the pool', () => {
  it("never lets a client's 'error' event end the process, also while the client is checked out", async () => {
    const pool = createPool(server.socketUrl(DB), () => undefined);
    try {
      const client = await pool.connect();
      // What pg does when the link fails between two queries (a FATAL 57P01 as the server shuts down): an 'error'
      // event, which throws where nobody listens.
      const fatal = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
      expect(() => client.emit('error', fatal)).not.toThrow();
      expect(isTransientPgError(fatal)).toBe(true);
      expect(isTransientPgError(new Error('Client was closed and is not queryable'))).toBe(true);
      client.release(true);
    } finally {
      await pool.end();
    }
  });
});
