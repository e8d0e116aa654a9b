import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIGINT, listOf, TIMESTAMP, VARCHAR } from '../../src/core/logical-type.js';
import type { DuckDbOutputQuery, Sink } from '../../src/core/types.js';
import { loadPipeline, type LoadedPipeline } from '../../src/pipeline/load.js';
import { countRows, firstRows, withOutputs, writtenColumns } from '../../src/operations/outputs.js';
import { runPipeline } from '../../src/operations/run.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { showOutputs } from '../../src/cli/show.js';
import { memoryIo } from './memory-io.js';

/** A pipeline file in `dir` whose sinks are `sinks` (a file source: nothing here calls a service). */
async function pipelineWith(dir: string, sinks: object[]): Promise<LoadedPipeline> {
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    JSON.stringify({ version: 1, name: 'p', source: { type: 'file', paths: ['.'], format: 'jsonl' }, sinks }),
  );
  return loadPipeline(file, {});
}

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** The first rows of the one sink `config` describes, as `--show` reads them. */
async function rowsOf(dir: string, config: object, limit: number): Promise<Record<string, unknown>[]> {
  const p = await pipelineWith(dir, [config]);
  return withOutputs(p, { log: quiet, command: 'test' }, (sinks) => firstRows(sinks[0]!, limit));
}

/** The one sink `config` describes, built (not opened) as the runtime builds it. */
async function sinkOf(dir: string, config: object): Promise<Sink> {
  return withOutputs(await pipelineWith(dir, [config]), { log: quiet, command: 'test' }, async (s) => s[0]!);
}

function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'sluice-show-'));
}

async function sql(database: string, statements: string[]): Promise<void> {
  const instance = await DuckDBInstance.fromCache(database);
  const connection = await instance.connect();
  try {
    for (const s of statements) await connection.run(s);
  } finally {
    connection.closeSync();
  }
}

describe('--show reads outputs back through DuckDB', () => {
  it('reads a DuckDB table, nested values as JSON', async () => {
    const dir = tempDir();
    const db = path.join(dir, 'w.duckdb');
    await sql(db, [
      `CREATE TABLE "my table" (id INTEGER, tags VARCHAR[], info STRUCT(a INTEGER, b VARCHAR), "at" TIMESTAMP, n BIGINT)`,
      `INSERT INTO "my table" VALUES (1, ['x','y'], {'a': 1, 'b': 'q'}, TIMESTAMP '2026-01-02 03:04:05', 9007199254740993), (2, [], NULL, NULL, 7), (3, NULL, NULL, NULL, NULL)`,
    ]);
    const rows = await rowsOf(dir, { type: 'duckdb', path: 'w.duckdb', table: 'my table' }, 2);
    expect(rows).toHaveLength(2);
    expect(rows).toEqual([
      { id: 1, tags: ['x', 'y'], info: { a: 1, b: 'q' }, at: '2026-01-02T03:04:05.000Z', n: '9007199254740993' },
      { id: 2, tags: [], info: null, at: null, n: 7 },
    ]);
  });

  it('reads JSONL outputs (plain and gzip) and Parquet outputs (hive-partitioned), ignoring temp files', async () => {
    const dir = tempDir();
    const jsonl = path.join(dir, 'out', 'jsonl');
    mkdirSync(path.join(jsonl, '.sluice-tmp'), { recursive: true });
    writeFileSync(path.join(jsonl, 'u1.jsonl'), '{"n":1,"s":"a"}\n{"n":2,"s":"b"}\n');
    writeFileSync(path.join(jsonl, 'u2.jsonl.gz'), gzipSync('{"n":3,"s":"c"}\n'));
    writeFileSync(path.join(jsonl, '.sluice-tmp', 'u3.tmp'), '{"n":99}\n');
    writeFileSync(path.join(jsonl, '_sluice_manifest.json'), '{"units":{}}');
    const rows = await rowsOf(dir, { type: 'jsonl', path: 'out/jsonl' }, 10);
    expect(rows.map((r) => r.n).sort()).toEqual([1, 2, 3]);

    const parquet = path.join(dir, 'pq');
    await sql(':memory:', [
      `COPY (SELECT * FROM (VALUES (1, 'us'), (2, 'de'), (3, 'us')) t(id, country_code)) TO '${parquet}' (FORMAT parquet, PARTITION_BY (country_code))`,
    ]);
    const pq = await rowsOf(dir, { type: 'parquet', path: 'pq' }, 10);
    expect(pq.map((r) => [r.id, r.country_code]).sort()).toEqual([
      [1, 'us'],
      [2, 'de'],
      [3, 'us'],
    ]);
  });

  it('prints a header per output, shortens long text, and says when there are no rows', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'empty'));
    mkdirSync(path.join(dir, 'long'));
    const list = Array.from({ length: 20 }, (_, i) => ({ title: `item ${i}` }));
    writeFileSync(
      path.join(dir, 'long', 'u.jsonl'),
      JSON.stringify({ about: 'x'.repeat(200), short: [1, 2], list, nested: { a: 'y'.repeat(100) } }) + '\n',
    );
    const pipeline = await pipelineWith(dir, [
      { type: 'jsonl', path: 'long' },
      { type: 'jsonl', path: 'empty' },
    ]);
    const io = memoryIo();
    await showOutputs(io, pipeline, 3);
    expect(io.stdout).toEqual([
      `\n== jsonl ${path.join(dir, 'long')}: first 3 rows`,
      JSON.stringify({ about: 'x'.repeat(60) + '…', short: [1, 2], list: '[20 items]', nested: '{1 field}' }),
      `\n== jsonl ${path.join(dir, 'empty')}: first 3 rows`,
      '(no rows)',
    ]);
  });

  it("reads through each sink's own outputQuery, identifiers and paths quoted", async () => {
    const dir = tempDir();
    expect(
      (await sinkOf(dir, { type: 'duckdb', path: 'a.duckdb', table: 'we"ird', schema: 's' })).outputQuery(5),
    ).toEqual({
      database: path.join(dir, 'a.duckdb'),
      sql: 'SELECT * FROM "s"."we""ird" LIMIT 5',
      countIsCheap: true,
    });
    expect(((await sinkOf(dir, { type: 'jsonl', path: "it's" })).outputQuery(1) as DuckDbOutputQuery).sql).toContain(
      `'${dir}/it''s/**/*.jsonl*'`,
    );
  });

  it('reports an output it cannot read as a warning, and goes on to the next', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'ok'));
    writeFileSync(path.join(dir, 'ok', 'u.jsonl'), '{"n":1}\n');
    // The database exists, the table does not.
    await sql(path.join(dir, 'w.duckdb'), ['CREATE TABLE other (x INTEGER)']);
    const pipeline = await pipelineWith(dir, [
      { type: 'duckdb', path: 'w.duckdb', table: 'missing' },
      { type: 'jsonl', path: 'ok' },
    ]);
    const io = memoryIo();
    await showOutputs(io, pipeline, 1);
    expect(io.stderr.join('\n')).toMatch(/warn: cannot show duckdb .*w\.duckdb table missing: .*missing/);
    expect(io.stdout.at(-1)).toBe(JSON.stringify({ n: 1 }));
  });
});

describe('--show reads a Postgres table through the sink itself', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
    await server.createDatabase('show');
  }, 120_000);
  afterAll(() => server?.stop());

  it('its rows, its columns (`sluice schema`) and its count (the report); none before the first run', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'in.jsonl'),
      [
        { id: 1, name: 'a', at: '2026-01-02T03:04:05Z', tags: ['x', 'y'] },
        { id: 2, name: 'b', at: '2026-01-03T00:00:00Z', tags: [] },
        { id: 3, name: 'c', at: '2026-01-04T00:00:00Z', tags: ['z'] },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n',
    );
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1
name: pg_show
source: { type: file, paths: [in.jsonl], format: jsonl }
transforms: [{ type: cast, fields: { at: timestamp } }]
sink: { type: postgres, url: "${server.socketUrl('show')}", schema: shown, table: "my rows" }
`,
    );
    const pipeline = await loadPipeline(file, {});
    const before = memoryIo();
    await showOutputs(before, pipeline, 2);
    expect(before.stdout.at(-1)).toBe('(no rows)');
    expect(before.stderr).toEqual([]);

    await runPipeline(pipeline, { fresh: false, logFormat: 'text', quiet: true, progress: false });
    const io = memoryIo();
    await showOutputs(io, pipeline, 2);
    expect(io.stderr).toEqual([]);
    expect(io.stdout[0]).toMatch(/^\n== postgres .* table shown\.my rows: first 2 rows$/);
    const rows = io.stdout.slice(1).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => [r.id, r.name, r.at, r.tags]).sort()).toEqual([
      [1, 'a', '2026-01-02T03:04:05.000Z', ['x', 'y']],
      [2, 'b', '2026-01-03T00:00:00.000Z', []],
    ]);
    expect(io.stdout.join('\n')).not.toContain('psql');

    await withOutputs(pipeline, { log: quiet, command: 'test' }, async ([sink]) => {
      expect(await countRows(sink!)).toBe(3);
      const columns = await writtenColumns(sink!);
      expect(columns?.slice(0, 4)).toEqual([
        { name: 'id', type: sink!.typeName(BIGINT) },
        { name: 'name', type: sink!.typeName(VARCHAR) },
        { name: 'at', type: sink!.typeName(TIMESTAMP) },
        { name: 'tags', type: sink!.typeName(listOf(VARCHAR)) },
      ]);
    });
  }, 60_000);
});
