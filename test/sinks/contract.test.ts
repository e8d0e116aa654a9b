/**
 * What every sink declares and answers without being opened (capabilities, describe, outputQuery), and the one
 * refusal a native load may give: built through the registry, as the engine and `--show` build them.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../src/core/checkpoint.js';
import { NativeLoadRefused } from '../../src/core/errors.js';
import type { DuckDbOutputQuery, Sink } from '../../src/core/types.js';
import { sinkDefs } from '../../sinks/index.js';
import { removeTempDirs, sinkContext, tempDir, unit } from './helpers.js';

afterAll(removeTempDirs);

const opened: Sink[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

function build(config: { type: string; [k: string]: unknown }, baseDir: string): Sink {
  const def = sinkDefs.find((d) => d.type === config.type)!;
  return def.create(def.schema.parse(config), {
    log: { debug() {}, info() {}, warn() {}, error() {} },
    baseDir,
    client: () => Promise.reject(new Error('no client')),
  }) as Sink;
}

const configs = {
  duckdb: { type: 'duckdb', path: 'out/w.duckdb', table: 't' },
  parquet: { type: 'parquet', path: 'out/pq' },
  jsonl: { type: 'jsonl', path: 'out/jsonl' },
};

describe('sink capabilities', () => {
  it('declares the raw formats each sink loads natively (and how, in the same place)', () => {
    const formats = Object.fromEntries(
      Object.entries(configs).map(([type, c]) => [type, [...(build(c, '/base').capabilities.native?.formats ?? [])]]),
    );
    expect(formats).toEqual({ duckdb: ['jsonl'], parquet: ['jsonl'], jsonl: ['jsonl'] });
  });
});

describe('describe()', () => {
  it('names the type, where the sink writes as typed from the current directory, and the table', () => {
    const cwd = process.cwd();
    const pipelines = path.join(cwd, 'pipelines');
    expect(build({ ...configs.duckdb, path: '../out/w.duckdb' }, pipelines).describe()).toBe(
      `duckdb ${path.join('out', 'w.duckdb')} table t`,
    );
    expect(build(configs.jsonl, pipelines).describe()).toBe(`jsonl ${path.join('pipelines', 'out', 'jsonl')}`);
    expect(build({ ...configs.parquet, path: '.' }, cwd).describe()).toBe('parquet .');
  });

  it('shows a place outside the current directory in full', () => {
    const elsewhere = path.resolve(process.cwd(), '..', 'elsewhere');
    expect(build(configs.parquet, elsewhere).describe()).toBe(`parquet ${path.join(elsewhere, 'out', 'pq')}`);
  });
});

/** The DuckDB query a sink read through DuckDB answers (`--show`, `sluice schema`, the report). */
function duckdbQuery(sink: Sink, limit: number): DuckDbOutputQuery {
  const q = sink.outputQuery(limit);
  if ('reader' in q) throw new Error(`${sink.describe()} reads its own output, not through DuckDB`);
  return q;
}

describe('outputQuery()', () => {
  it('says whether counting the output reads metadata only (what `sluice report` counts unasked)', () => {
    const cheap = (c: { type: string; [k: string]: unknown }): boolean => build(c, '/base').outputQuery(0).countIsCheap;
    expect(Object.fromEntries(Object.entries(configs).map(([type, c]) => [type, cheap(c)]))).toEqual({
      duckdb: true,
      parquet: true,
      jsonl: false,
    });
    const url = 'postgres://u@127.0.0.1:1/db';
    expect(cheap({ type: 'postgres', url, table: 't' })).toBe(false);
    expect(cheap({ type: 'clickhouse', table: 't' })).toBe(true);
    expect(cheap({ type: 'clickhouse', table: 't', write: 'merge', primary_key: ['id'] })).toBe(false);
    expect(cheap({ type: 'parquet', path: 's3://bucket/out' })).toBe(false);
  });

  it('reads a DuckDB table in its database file, schema-qualified when configured', () => {
    expect(duckdbQuery(build(configs.duckdb, '/base'), 5)).toEqual({
      database: '/base/out/w.duckdb',
      sql: 'SELECT * FROM "t" LIMIT 5',
      countIsCheap: true,
    });
    expect(duckdbQuery(build({ ...configs.duckdb, table: 'we"ird', schema: 's' }, '/base'), 1).sql).toBe(
      'SELECT * FROM "s"."we""ird" LIMIT 1',
    );
  });

  it('reads file outputs with the DuckDB reader for their format, in memory, paths quoted', () => {
    const pq = duckdbQuery(build({ ...configs.parquet, path: "it's" }, '/base'), 3);
    expect(pq.database).toBeUndefined();
    expect(pq.sql).toBe(
      `SELECT * FROM read_parquet('/base/it''s/**/*.parquet', hive_partitioning = true, union_by_name = true) LIMIT 3`,
    );
    const jl = duckdbQuery(build(configs.jsonl, '/base'), 2);
    expect(jl.database).toBeUndefined();
    expect(jl.sql).toBe(
      `SELECT * FROM read_json_auto('/base/out/jsonl/**/*.jsonl*', format = 'newline_delimited', union_by_name = true) LIMIT 2`,
    );
  });
});

describe('NativeLoadRefused is the only refusal', () => {
  for (const type of ['duckdb', 'jsonl'] as const) {
    it(`${type}: refuses other formats and files that are not JSONL as a whole; other failures stay themselves`, async () => {
      const dir = await tempDir();
      const sink = build(configs[type], dir);
      await sink.open(sinkContext(dir));
      opened.push(sink);
      const good = path.join(dir, 'good.jsonl');
      await writeFile(good, '{"id":1}\n');
      const bad = path.join(dir, 'bad.jsonl');
      await writeFile(bad, '{"id":1}\n{"id": oops}\n');
      const load = (id: string, file: string, format: 'jsonl' | 'csv' | 'json' = 'jsonl') =>
        sink.capabilities
          .native!.load(unit(id), { path: file, decode: { format }, temporary: false }, NO_CHECKPOINT)
          .catch((e: unknown) => e);

      for (const format of ['csv', 'json'] as const)
        expect(await load(`as-${format}`, good, format), format).toBeInstanceOf(NativeLoadRefused);
      const refused = await load('bad', bad);
      expect(refused).toBeInstanceOf(NativeLoadRefused);
      expect(refused).toMatchObject({ sink: `${type} sink`, reason: expect.stringMatching(/not JSON at byte 9/) });
      const missing = await load('missing', path.join(dir, 'nope.jsonl'));
      expect(missing).toMatchObject({ code: 'ENOENT' });
      expect(missing).not.toBeInstanceOf(NativeLoadRefused);
      expect(await sink.committedUnits()).toEqual(new Set());
      expect(await load('good', good)).toEqual({ committed: true, records: 1 });
    });
  }
});
