/**
 * The duckdb sink's `queryable()` runs what checks ask read-only, enforced by DuckDB (src/sink-kit/duckdb-read-only.ts): a
 * statement that is not a query, a second statement and a write inside a SELECT are refused on the sink's own
 * database; a file or another table is refused by the locked-down instance the query is bound in first. And the
 * checks leave the sink's hold on its file as it was: another process still cannot open it for writing.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { QueryRefused } from '../../../src/core/errors.js';
import { lockedDownInstance } from '../../../src/sink-kit/duckdb-read-only.js';
import { batches, unit } from '../helpers.js';
import { duckdbSinkHarness } from './harness.js';

const h = duckdbSinkHarness('out.duckdb');

async function refusedWith(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(QueryRefused);
  return (err as Error).message;
}

describe('duckdb queryable', () => {
  it('refuses what is not one read-only query on the table, and reads what is', async () => {
    const sink = await h.openSink();
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }, { id: 2 }]), NO_CHECKPOINT);
    await sink.finish();
    const out = await sink.queryable();
    try {
      expect(await out.query(`SELECT count(*)::INT AS n FROM ${out.relation}`)).toEqual([{ n: 2 }]);
      expect(await refusedWith(out.query(`DELETE FROM ${out.relation}`))).toMatch(/not a query \(a DELETE statement\)/);
      expect(await refusedWith(out.query(`SELECT 1; DELETE FROM ${out.relation}`))).toMatch(/more than one statement/);
      expect(await refusedWith(out.query(`COPY (SELECT 1) TO '${path.join(h.dir, 'x.csv')}'`))).toMatch(/^refused: /);
      expect(await refusedWith(out.query(`SELECT * FROM ${out.relation}, read_text('/etc/hostname')`))).toMatch(
        /outside the checked output \(Permission Error/,
      );
      expect(await refusedWith(out.query(`SELECT * FROM ${out.relation}, _sluice_state`))).toMatch(
        /beyond the checked table \(Catalog Error/,
      );
      // A plain mistake is not a refusal: it says what is wrong.
      const typo = await out.query(`SELECT nope FROM ${out.relation}`).catch((e: unknown) => e as Error);
      expect(typo).not.toBeInstanceOf(QueryRefused);
      expect((typo as Error).message).toMatch(/nope/);
      expect(await out.query(`SELECT count(*)::INT AS n FROM ${out.relation}`)).toEqual([{ n: 2 }]);
    } finally {
      await out.close();
    }
  });

  it('a write inside a SELECT is refused by the read-only transaction itself', async () => {
    const sink = await h.openSink();
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    await sink.finish();
    const { readOnlyQuery } = await import('../../../src/sink-kit/duckdb-read-only.js');
    const { DuckDBInstance } = await import('@duckdb/node-api');
    // The sink's own instance (DuckDB's cache), as the checks' connection is: a sequence there, then nextval.
    const db = await DuckDBInstance.fromCache(h.db);
    const conn = await db.connect();
    try {
      await conn.run('CREATE SEQUENCE seq');
      expect(await refusedWith(readOnlyQuery(conn, "SELECT nextval('seq') AS v FROM t"))).toMatch(/it writes/);
      expect((await conn.runAndReadAll("SELECT nextval('seq')::INT AS v")).getRowObjectsJson()).toEqual([{ v: 1 }]);
    } finally {
      conn.closeSync();
    }
  });

  it('checks leave the file locked against another process', async () => {
    const sink = await h.openSink();
    await sink.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    await sink.finish();
    const out = await sink.queryable();
    await out.query(`SELECT count(*) AS n FROM ${out.relation}`);
    await out.close();
    const other = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         DuckDBInstance.create(${JSON.stringify(h.db)}).then(() => console.log('opened'), (e) => console.log(e.message));`,
      ],
      { cwd: path.resolve(import.meta.dirname, '../../..'), encoding: 'utf8' },
    );
    expect(other.stdout).toMatch(/Could not set lock|Conflicting lock/);
  });
});

describe('lockedDownInstance', () => {
  it('reads the paths it is given and nothing else; its settings cannot be undone', async () => {
    const sandbox = await lockedDownInstance([]);
    try {
      const run = (sql: string) =>
        sandbox.conn.run(sql).then(
          () => 'ran',
          (e: Error) => e.message,
        );
      expect(await run(`SELECT * FROM read_text('/etc/hostname')`)).toMatch(/Permission Error/);
      expect(await run('SET enable_external_access = true')).toMatch(/configuration has been locked/);
      expect(await run('RESET allowed_paths')).toMatch(/configuration has been locked/);
      expect(await run(`ATTACH '${path.join(h.dir, 'other.duckdb')}'`)).toMatch(/Permission Error/);
      expect(await run('INSTALL httpfs')).toMatch(/Permission Error/);
    } finally {
      await sandbox.close();
    }
  });
});
