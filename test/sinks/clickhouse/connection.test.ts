/**
 * What a failure of the server or the link means for the one retry policy, on real failures against a real server
 * (18.16, whose errors the client does not parse: the code is read from the text): a server that is down, a
 * connection reset mid-insert, a load balancer's 503 are transient; SQL the server refuses, a table that is not
 * there, a wrong password are not.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, isTransientClickHouseError, resolveTarget, Server } from '../../../sinks/clickhouse/connection.js';
import { startClickHouse, CH_PASSWORD, CH_USER, type ClickHouseServer } from '../../support/clickhouse-server.js';
import { startHttpFaultProxy, type HttpFaultProxy } from '../../support/http-fault-proxy.js';
import { available } from './harness.js';

let server: ClickHouseServer;
let proxy: HttpFaultProxy;
beforeAll(async () => {
  if (!available) return;
  server = await startClickHouse();
  await server.query('CREATE TABLE default.t (a Int64, s String) ENGINE = MergeTree ORDER BY tuple()');
  proxy = await startHttpFaultProxy({ port: server.httpPort });
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  server?.stop();
});

function through(url: string): Server {
  return new Server(resolveTarget(url, 'default'));
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err,
  );
}

/** TabSeparated rows, enough to span many TCP segments. */
function body(rows: number): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < rows; i += 1000)
        yield Array.from({ length: 1000 }, (_, k) => `${i + k}\t${'x'.repeat(100)}\n`).join('');
    })(),
    { objectMode: false },
  );
}

describe.skipIf(!available)('clickhouse connection: which failures are transient', () => {
  it('not: SQL the server refuses, a table that is not there, a wrong password', async () => {
    const direct = through(server.url());
    try {
      const syntax = await failure(direct.exec('SELEC 1'));
      expect(errorCode(syntax)).toBe(62);
      expect(isTransientClickHouseError(syntax)).toBe(false);
      const missing = await failure(direct.rows('SELECT * FROM default.nope'));
      expect(errorCode(missing)).toBe(60);
      expect(isTransientClickHouseError(missing)).toBe(false);
    } finally {
      await direct.close();
    }
    const wrong = through(`http://${CH_USER}:wrong@127.0.0.1:${server.httpPort}`);
    try {
      const denied = await failure(wrong.exec('SELECT 1'));
      expect(errorCode(denied)).toBe(193);
      expect(isTransientClickHouseError(denied)).toBe(false);
    } finally {
      await wrong.close();
    }
  });

  it('transient: a load balancer’s 503 in front of the server', async () => {
    const viaProxy = through(proxy.url(`${CH_USER}:${CH_PASSWORD}`));
    try {
      proxy.answerNext(() => true, 503);
      const err = await failure(viaProxy.exec('SELECT 1'));
      expect(errorCode(err)).toBeUndefined();
      expect(isTransientClickHouseError(err)).toBe(true);
      // The next one passes.
      expect(await viaProxy.rows('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      proxy.answerNext(() => true, 403);
      expect(isTransientClickHouseError(await failure(viaProxy.exec('SELECT 1')))).toBe(false);
    } finally {
      await viaProxy.close();
    }
  });

  it('transient: a connection reset mid-insert; 18.16 keeps the part it read (why a unit goes to a staging table)', async () => {
    const viaProxy = through(proxy.url(`${CH_USER}:${CH_PASSWORD}`));
    try {
      const cutBefore = proxy.dealt.cut;
      proxy.cutBodyAfter((r) => r.query.startsWith('INSERT'), 500_000);
      const err = await failure(viaProxy.insert('default.t', ['a', 's'], body(50_000)));
      expect(proxy.dealt.cut).toBe(cutBefore + 1);
      expect(isTransientClickHouseError(err), String(err)).toBe(true);
      // The server took the cut body's end for the end of the data: part of the insert is stored.
      const [stored] = await server.rows<{ n: number }>('SELECT count() AS n FROM default.t');
      expect(stored!.n).toBeLessThan(50_000);
    } finally {
      await viaProxy.close();
    }
  });

  it('transient: the server down, and the first statement after it came back on a connection it closed', async () => {
    const direct = through(server.url());
    try {
      expect(await direct.rows('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      await server.stopServer();
      const down = await failure(direct.exec('SELECT 1'));
      expect(isTransientClickHouseError(down), String(down)).toBe(true);
      await server.startServer();
      // Whatever the pooled socket meets now, it is either an answer or a transient failure.
      const again = await direct.rows('SELECT 1 AS one').catch((e: unknown) => e);
      if (again instanceof Error) expect(isTransientClickHouseError(again)).toBe(true);
      else expect(again).toEqual([{ one: 1 }]);
    } finally {
      await direct.close();
    }
  });
});
