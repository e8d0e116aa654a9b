/**
 * Checks can only read (issue 30): a `sql` check that closes sluice's wrapper to run more statements, writes, or
 * reads files outside the output is refused — by the pipeline file's validation where the text shows it (more than
 * one statement, not a query), and by the database where it does not: on DuckDB a read-only transaction in which
 * only one SELECT may run, bound first in a locked-down instance that reaches no file; on Postgres a READ ONLY
 * transaction with the statement sent over the extended protocol; on a file sink an in-memory DuckDB that may read
 * the output's files and nothing else. Each attack is shown on real sinks (DuckDB file, a throwaway PostgreSQL, a
 * JSONL and a Parquet output); committed rows stay, no table or file appears, no outside text reaches a result.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES, SluiceError } from '../../src/core/errors.js';
import { runPipeline } from '../../src/operations/run.js';
import { silentLogger } from '../../src/runtime/logger.js';
import type { CheckConfig } from '../../src/observe/checks/config.js';
import type { CheckResult } from '../../src/observe/events.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
let pg: PostgresServer;
let dir: string;
/** A line of /etc/passwd every Linux has: it must never be in a check's result. */
const PASSWD = readFileSync('/etc/passwd', 'utf8').split('\n')[0]!;

beforeAll(async () => {
  pg = await startPostgres();
  await pg.createDatabase('readonly');
  await pg.query('readonly', 'CREATE SEQUENCE probe_seq');
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-checks-ro-'));
  mkdirSync(path.join(dir, 'in'));
  const rows = [1, 2, 3].map((id) => JSON.stringify({ id, name: `n${id}` }));
  writeFileSync(path.join(dir, 'in/rows.jsonl'), rows.join('\n') + '\n');
}, 120_000);
afterAll(() => {
  pg?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type SinkKind = 'duckdb' | 'postgres' | 'jsonl' | 'parquet';

function sinkYaml(kind: SinkKind, name: string): string {
  switch (kind) {
    case 'duckdb':
      return `type: duckdb\n    path: ${name}.duckdb\n    table: t`;
    case 'postgres':
      return `type: postgres\n    url: "\${PG_URL}"\n    table: ${name}`;
    case 'jsonl':
      return `type: jsonl\n    path: out-${name}`;
    case 'parquet':
      return `type: parquet\n    path: out-${name}`;
  }
}

function pipelineFile(kind: SinkKind, name: string, checkSql?: string): string {
  const file = path.join(dir, `${name}.yaml`);
  const checks =
    checkSql === undefined ? '' : `\n    checks: [{ type: sql, name: probe, sql: ${JSON.stringify(checkSql)} }]`;
  writeFileSync(
    file,
    `version: 1
name: ${name}
source: { type: file, paths: [in], format: jsonl }
sinks:
  - ${sinkYaml(kind, name)}${checks}
`,
  );
  return file;
}

const env = () => ({ PG_URL: pg.socketUrl('readonly') });

/** A run whose sink gets `checks` as given — past the file's validation, as an edit of the loaded config would. */
async function runWithChecks(kind: SinkKind, name: string, checks: CheckConfig[]) {
  const p = await loadPipeline(pipelineFile(kind, name), env());
  p.config.sinks![0]!.checks = checks;
  return runPipeline(p, quiet, { log: silentLogger }).then(
    (summary) => ({ err: undefined, results: summary.checks ?? [] }),
    (err: SluiceError & { summary?: { checks?: CheckResult[] } }) => ({ err, results: err.summary?.checks ?? [] }),
  );
}

async function duckdbRows(file: string, sql: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(file);
  const conn = await db.connect();
  try {
    return (await conn.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

const sql = (name: string, text: string): CheckConfig => ({ type: 'sql', name, sql: text, severity: 'error' });

/** The probe's attack: close sluice's `SELECT … FROM (<check>) v`, run `statement`, open a harmless query again. */
const closesWrapper = (statement: string): string =>
  `SELECT * FROM {table} WHERE false) v; ${statement}; SELECT * FROM (SELECT 1 AS x WHERE false`;

describe('a check that closes the wrapper is refused when the file is read', () => {
  const attacks: [string, string][] = [
    ['a DELETE after the query', closesWrapper('DELETE FROM {table} WHERE id = 1')],
    ['a CREATE TABLE after the query', 'SELECT * FROM {table}; CREATE TABLE evil AS SELECT 1 AS x'],
    ['a statement that is not a query', 'DELETE FROM {table} WHERE id = 1'],
    [
      'a parenthesis that closes the wrapper',
      'SELECT * FROM {table} WHERE false) v UNION ALL SELECT 1 AS n FROM (SELECT 1',
    ],
    ['no {table}', "SELECT * FROM read_text('/etc/passwd')"],
  ];
  it.each(attacks)('%s: a config error (exit 2) naming the check; nothing runs', async (_what, text) => {
    const file = pipelineFile('duckdb', 'parsed', text);
    const err = await loadPipeline(file, env()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).exitCode).toBe(EXIT_CODES.config);
    expect((err as SluiceError).message).toMatch(/checks/);
  });
});

describe('the database refuses what the text does not show', () => {
  it('DuckDB: a DELETE, a CREATE, a COPY TO and a file read are refused; the rows stay, nothing is written', async () => {
    const file = path.join(dir, 'duck.duckdb');
    const copied = path.join(dir, 'copied.csv');
    const { err, results } = await runWithChecks('duckdb', 'duck', [
      sql('delete', closesWrapper('DELETE FROM {table} WHERE id = 1')),
      sql('create', closesWrapper('CREATE TABLE evil AS SELECT 1 AS x')),
      sql('copy', closesWrapper(`COPY (SELECT 1) TO '${copied}'`)),
      sql('passwd', "SELECT * FROM {table}, read_text('/etc/passwd')"),
      sql('other table', 'SELECT * FROM {table}, _sluice_state'),
      sql('fine', 'SELECT * FROM {table} WHERE id < 0'),
    ]);
    expect((err as SluiceError).exitCode).toBe(EXIT_CODES.checks);
    const byName = new Map(results.map((r) => [r.name, r]));
    for (const name of ['delete', 'create', 'copy', 'passwd', 'other table']) {
      expect(byName.get(name), name).toMatchObject({ passed: false });
      expect(byName.get(name)!.message, name).toMatch(/^refused: /);
    }
    expect(byName.get('fine')).toMatchObject({ passed: true });
    expect(JSON.stringify(results)).not.toContain(PASSWD);
    expect(await duckdbRows(file, 'SELECT count(*)::INT AS n FROM t')).toEqual([{ n: 3 }]);
    expect(await duckdbRows(file, "SELECT count(*)::INT AS n FROM duckdb_tables() WHERE table_name = 'evil'")).toEqual([
      { n: 0 },
    ]);
    expect(existsSync(copied)).toBe(false);
  }, 60_000);

  it('Postgres: a DELETE and a CREATE TABLE are refused (read-only, one statement); the rows stay', async () => {
    const { err, results } = await runWithChecks('postgres', 'pgro', [
      sql('delete', closesWrapper('DELETE FROM {table} WHERE id = 1')),
      sql('create', closesWrapper('CREATE TABLE evil AS SELECT 1 AS x')),
      sql('cte delete', 'WITH d AS (DELETE FROM {table} WHERE id = 2 RETURNING *) SELECT * FROM d'),
      // One SELECT that writes where no rollback undoes it (a sequence): the READ ONLY transaction refuses it.
      sql('nextval', "SELECT * FROM {table} WHERE nextval('probe_seq') > 0"),
      // One that PostgreSQL lets a read-only transaction make (a large object): the rollback after undoes it.
      sql('large object', 'SELECT * FROM {table} WHERE lo_create(0) < 0'),
      sql('fine', 'SELECT * FROM {table} WHERE id < 0'),
    ]);
    expect((err as SluiceError).exitCode).toBe(EXIT_CODES.checks);
    const byName = new Map(results.map((r) => [r.name, r]));
    for (const name of ['delete', 'create', 'cte delete', 'nextval']) {
      expect(byName.get(name), name).toMatchObject({ passed: false });
      expect(byName.get(name)!.message, name).toMatch(/^refused: /);
    }
    expect(byName.get('fine')).toMatchObject({ passed: true });
    expect(await pg.query('readonly', 'SELECT count(*)::int AS n FROM public.pgro')).toEqual([{ n: 3 }]);
    expect(await pg.query('readonly', "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'evil'")).toEqual([
      { n: 0 },
    ]);
    expect(byName.get('nextval')!.message).toMatch(/^refused: it writes \(cannot execute nextval\(\) in a read-only/);
    expect(await pg.query('readonly', "SELECT nextval('probe_seq')::int AS n")).toEqual([{ n: 1 }]);
    expect(byName.get('large object')).toMatchObject({ passed: true });
    expect(await pg.query('readonly', 'SELECT count(*)::int AS n FROM pg_largeobject_metadata')).toEqual([{ n: 0 }]);
  }, 60_000);

  it.each(['jsonl', 'parquet'] as const)(
    '%s: a file read outside the output and a COPY TO are refused',
    async (kind) => {
      const copied = path.join(dir, `out-${kind}-files`, 'copied.csv');
      const { err, results } = await runWithChecks(kind, `${kind}-files`, [
        sql('passwd', "SELECT * FROM {table}, read_text('/etc/passwd')"),
        sql('copy', closesWrapper(`COPY (SELECT 1) TO '${copied}'`)),
        sql('fine', 'SELECT * FROM {table} WHERE id < 0'),
      ]);
      expect((err as SluiceError).exitCode).toBe(EXIT_CODES.checks);
      const byName = new Map(results.map((r) => [r.name, r]));
      for (const name of ['passwd', 'copy']) {
        expect(byName.get(name), name).toMatchObject({ passed: false });
        expect(byName.get(name)!.message, name).toMatch(/^refused: /);
      }
      expect(byName.get('fine')).toMatchObject({ passed: true });
      expect(JSON.stringify(results)).not.toContain(PASSWD);
      expect(existsSync(copied)).toBe(false);
    },
    60_000,
  );
});
