import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import type { LoadedPipeline } from '../../src/pipeline/load.js';
import { readRows, showOutputs, sinkForShow } from '../../src/cli/show.js';
import { memoryIo } from './memory-io.js';

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
    const rows = await readRows(sinkForShow({ type: 'duckdb', path: 'w.duckdb', table: 'my table' }, dir), 2);
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
    const rows = await readRows(sinkForShow({ type: 'jsonl', path: 'out/jsonl' }, dir), 10);
    expect(rows.map((r) => r.n).sort()).toEqual([1, 2, 3]);

    const parquet = path.join(dir, 'pq');
    await sql(':memory:', [
      `COPY (SELECT * FROM (VALUES (1, 'us'), (2, 'de'), (3, 'us')) t(id, country_code)) TO '${parquet}' (FORMAT parquet, PARTITION_BY (country_code))`,
    ]);
    const pq = await readRows(sinkForShow({ type: 'parquet', path: 'pq' }, dir), 10);
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
    const pipeline = {
      file: path.join(dir, 'p.yaml'),
      baseDir: dir,
      name: 'p',
      config: {
        sinks: [
          { type: 'jsonl', path: 'long' },
          { type: 'jsonl', path: 'empty' },
        ],
      },
    } as unknown as LoadedPipeline;
    const io = memoryIo();
    await showOutputs(io, pipeline, 3);
    expect(io.stdout).toEqual([
      `\n== jsonl ${path.join(dir, 'long')}: first 3 rows`,
      JSON.stringify({ about: 'x'.repeat(60) + '…', short: [1, 2], list: '[20 items]', nested: '{1 field}' }),
      `\n== jsonl ${path.join(dir, 'empty')}: first 3 rows`,
      '(no rows)',
    ]);
  });

  it("reads through each sink's own outputQuery, identifiers and paths quoted", () => {
    expect(
      sinkForShow({ type: 'duckdb', path: 'a.duckdb', table: 'we"ird', schema: 's' }, '/base').outputQuery(5),
    ).toEqual({
      database: '/base/a.duckdb',
      sql: 'SELECT * FROM "s"."we""ird" LIMIT 5',
    });
    expect(sinkForShow({ type: 'jsonl', path: "it's" }, '/base').outputQuery(1).sql).toContain(
      `'/base/it''s/**/*.jsonl*'`,
    );
  });

  it('reports an output it cannot read as a warning, and goes on to the next', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'ok'));
    writeFileSync(path.join(dir, 'ok', 'u.jsonl'), '{"n":1}\n');
    const pipeline = {
      file: path.join(dir, 'p.yaml'),
      baseDir: dir,
      name: 'p',
      config: {
        sinks: [
          { type: 'duckdb', path: 'w.duckdb', table: 'missing' },
          { type: 'jsonl', path: 'ok' },
        ],
      },
    } as unknown as LoadedPipeline;
    const io = memoryIo();
    await showOutputs(io, pipeline, 1);
    expect(io.stderr.join('\n')).toMatch(/warn: cannot show duckdb .*w\.duckdb table missing: .*missing/);
    expect(io.stdout.at(-1)).toBe(JSON.stringify({ n: 1 }));
  });
});
