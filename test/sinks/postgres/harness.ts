/**
 * The postgres sink's tests' harness: one throwaway cluster per test file, a table of its own per test, sinks
 * closed after each, and the table read back as plain values.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { DeadLetter, SinkContext, WorkUnit } from '../../../src/core/types.js';
import { postgresSinkSchema } from '../../../sinks/postgres/config.js';
import { PostgresSink } from '../../../sinks/postgres/sink.js';
import { startPostgres, type PostgresServer } from '../../support/postgres-server.js';
import { normalize, sinkContext, type TestContext } from '../helpers.js';

export const DB = 'sink_test';

export function unit(id: string): WorkUnit {
  return { id: `run1/${id}`, params: {} };
}

/** Registers the file's hooks; the server is there once `beforeAll` ran. */
export function postgresSinkHarness() {
  let server: PostgresServer | undefined;
  beforeAll(async () => {
    server = await startPostgres();
    await server.createDatabase(DB);
  }, 120_000);
  afterAll(() => server?.stop());

  const opened: PostgresSink[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
  });

  const started = (): PostgresServer => {
    if (!server) throw new Error('the postgres test server has not started');
    return server;
  };
  let tables = 0;

  return {
    get server(): PostgresServer {
      return started();
    },

    /** Closes `sink` after the test. */
    closeAfter(sink: PostgresSink): void {
      opened.push(sink);
    },

    /** A table name of its own for each test. */
    freshTable(): string {
      return `t${++tables}`;
    },

    async openSink(
      config: Record<string, unknown>,
      ctx: Partial<SinkContext> & { fresh?: boolean } = {},
    ): Promise<{ sink: PostgresSink; ctx: TestContext; letters: DeadLetter[] }> {
      const sink = new PostgresSink(
        postgresSinkSchema.parse({ type: 'postgres', url: started().socketUrl(DB), ...config }),
      );
      const letters: DeadLetter[] = [];
      const base = sinkContext('/nowhere', { fresh: ctx.fresh ?? false });
      const full: TestContext = { ...base, ...ctx, deadLetter: (d) => letters.push(d) };
      await sink.open(full);
      opened.push(sink);
      return { sink, ctx: full, letters };
    },

    async rows(sql: string): Promise<Record<string, unknown>[]> {
      return (await started().query(DB, sql)).map((r) => normalize(r) as Record<string, unknown>);
    },

    async columnTypes(table: string): Promise<Record<string, string>> {
      const r = await started().query<{ column_name: string; t: string }>(
        DB,
        `SELECT column_name, format_type(atttypid, atttypmod) AS t FROM information_schema.columns c
           JOIN pg_attribute a ON a.attrelid = to_regclass(quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))
            AND a.attname = c.column_name
          WHERE c.table_schema = 'public' AND c.table_name = $1 ORDER BY ordinal_position`,
        [table],
      );
      return Object.fromEntries(r.map((x) => [x.column_name, x.t]));
    },
  };
}
