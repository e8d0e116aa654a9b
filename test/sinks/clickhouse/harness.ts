/**
 * The clickhouse sink's tests' harness: one throwaway server per test file (test/support/clickhouse-server.ts), a
 * table of its own per test, sinks closed after each, and tables read back as plain values. Without the server's
 * package on this machine (and no way to install it) the file's tests are skipped: `available`.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { DeadLetter, SinkContext, WorkUnit } from '../../../src/core/types.js';
import { clickhouseSinkSchema } from '../../../sinks/clickhouse/config.js';
import { ClickHouseSink } from '../../../sinks/clickhouse/sink.js';
import { startClickHouse, type ClickHouseServer } from '../../support/clickhouse-server.js';
import { systemBinary } from '../../support/system-packages.js';
import { sinkContext, type TestContext } from '../helpers.js';

export const DB = 'sink_test';

/** Whether this machine has the server (the suite's global setup installs it where it can). */
export const available = systemBinary('clickhouse') !== undefined;

export function unit(id: string): WorkUnit {
  return { id: `run1/${id}`, params: {} };
}

/** Registers the file's hooks; the server is there once `beforeAll` ran. */
export function clickhouseSinkHarness() {
  let server: ClickHouseServer | undefined;
  beforeAll(async () => {
    if (!available) return;
    server = await startClickHouse();
    await server.createDatabase(DB);
  }, 120_000);
  afterAll(() => server?.stop());

  const opened: ClickHouseSink[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
  });

  const started = (): ClickHouseServer => {
    if (!server) throw new Error('the clickhouse test server has not started');
    return server;
  };
  let tables = 0;

  return {
    get server(): ClickHouseServer {
      return started();
    },

    /** A table name of its own for each test. */
    freshTable(): string {
      return `t${++tables}`;
    },

    /** A sink on the file's server (not opened). */
    sinkFor(config: Record<string, unknown>): ClickHouseSink {
      return new ClickHouseSink(
        clickhouseSinkSchema.parse({ type: 'clickhouse', url: started().url(), database: DB, ...config }),
      );
    },

    async openSink(
      config: Record<string, unknown>,
      ctx: Partial<SinkContext> & { fresh?: boolean } = {},
    ): Promise<{ sink: ClickHouseSink; ctx: TestContext; letters: DeadLetter[] }> {
      const sink = new ClickHouseSink(
        clickhouseSinkSchema.parse({ type: 'clickhouse', url: started().url(), database: DB, ...config }),
      );
      const letters: DeadLetter[] = [];
      const base = sinkContext('/nowhere', { fresh: ctx.fresh ?? false });
      const full: TestContext = { ...base, ...ctx, deadLetter: (d) => letters.push(d) };
      await sink.open(full);
      opened.push(sink);
      return { sink, ctx: full, letters };
    },

    /** Rows of a SELECT, 64-bit integers as numbers. */
    rows(sql: string): Promise<Record<string, unknown>[]> {
      return started().rows(sql);
    },

    /** Column → `type COMMENT 'comment'` of a table (hidden columns too). */
    async columnTypes(table: string): Promise<Record<string, string>> {
      const cols = await started().rows<{ name: string; type: string; comment: string }>(
        `SELECT name, type, comment FROM system.columns WHERE database = '${DB}' AND table = '${table}'`,
      );
      return Object.fromEntries(cols.map((c) => [c.name, c.comment ? `${c.type} '${c.comment}'` : c.type]));
    },

    /** Tables the sink made beside `table` (staging, generations). */
    async sideTables(table: string): Promise<string[]> {
      const t = await started().rows<{ name: string }>(
        `SELECT name FROM system.tables WHERE database = '${DB}' AND startsWith(name, '${table}__sluice_')`,
      );
      return t.map((x) => x.name);
    },
  };
}
