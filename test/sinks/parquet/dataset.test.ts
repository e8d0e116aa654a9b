/**
 * A Parquet output is one dataset across runs: `read_parquet('<path>/**\/*.parquet', union_by_name = true)` gives
 * the rows and the types the DuckDB sink's table has for the same sequence of runs. Also: declared columns, the
 * columns a commit reports as changed, `currentColumns()` and unit checkpoints.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { Row, Sink } from '../../../src/core/types.js';
import { DateOnly } from '../../../src/core/values.js';
import type { DeclaredSchema } from '../../../src/core/declared.js';
import {
  BIGINT,
  DATE,
  DOUBLE,
  TIMESTAMP,
  VARCHAR,
  describeType,
  listOf,
  structOf,
} from '../../../src/core/logical-type.js';
import { duckdbSinkSchema } from '../../../sinks/duckdb/config.js';
import { DuckDBSink } from '../../../sinks/duckdb/sink.js';
import type { Manifest } from '../../../src/sink-kit/output-files/manifest.js';
import { parquetSinkSchema } from '../../../sinks/parquet/config.js';
import { ParquetSink } from '../../../sinks/parquet/sink.js';
import { batches, columnTypes, query, removeTempDirs, sinkContext, tempDir, unit } from '../helpers.js';

afterAll(removeTempDirs);

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});

const glob = (): string => path.join(dir, 'pq', '**', '*.parquet');
const parquet = (): string => `read_parquet('${glob()}', union_by_name = true)`;
const db = (): string => path.join(dir, 'w.duckdb');

function parquetSink(over: Record<string, unknown> = {}): ParquetSink {
  return new ParquetSink(parquetSinkSchema.parse({ type: 'parquet', path: 'pq', ...over }));
}
function duckdbSink(): DuckDBSink {
  return new DuckDBSink(duckdbSinkSchema.parse({ type: 'duckdb', path: 'w.duckdb', table: 't' }));
}

/** One run of `sink`: open, one unit per batch of rows, finish, close. */
async function run(sink: Sink, runId: string, units: Row[][], declared?: DeclaredSchema): Promise<void> {
  await sink.open({ ...sinkContext(dir, { fresh: false }), ...(declared && { declared }) });
  for (const [i, rows] of units.entries()) await sink.writeUnit(unit(`${runId}-${i}`), batches(rows), NO_CHECKPOINT);
  await sink.finish();
  await sink.close();
}

interface Output {
  types: Record<string, string>;
  rows: Record<string, unknown>[];
}

async function output(relation: string, file?: string): Promise<Output> {
  return {
    types: await columnTypes(`SELECT * FROM ${relation}`, file),
    rows: await query(`SELECT * FROM ${relation} ORDER BY id`, file),
  };
}

describe('parquet output across runs reads as the DuckDB table', () => {
  // One column per change, all in one sequence of runs (each run is a publish of its own, so each a file).
  const runs: Row[][][] = [
    [
      [
        {
          id: 1,
          fraction: 1,
          text: 1,
          offset: '2024-01-02T03:04:05+02:00',
          nulls: null,
          s: { a: 1 },
          l: [{ a: 1 }],
          struct_text: { a: 1 },
          text_struct: 'x',
          nested: { t: 'y' },
          chain: 1,
          day_chain: new DateOnly('2024-01-02'),
          list_chain: [{ v: 1 }],
          day: new DateOnly('2024-01-02'),
        },
      ],
      [{ id: 2, text_struct: 'z', nested: { t: 'w' }, chain: 2 }],
    ],
    [
      [
        {
          id: 3,
          fraction: 2.5,
          text: 'x',
          offset: 'soon',
          nulls: 5,
          added: true,
          s: { a: 2, b: 'x' },
          l: [{ a: 2, b: 1.5 }],
          struct_text: 'x',
          text_struct: { a: 1 },
          nested: { t: [1] },
          chain: 2.5,
          day_chain: new Date('2024-01-03T04:05:06Z'),
          list_chain: [{ v: 'x' }],
          day: new Date('2024-01-03T04:05:06Z'),
        },
      ],
    ],
    [[{ id: 4, chain: 'x', day_chain: 'later', list_chain: [{ v: { o: 1 } }] }]],
  ];

  it('after every run: the same columns, types and rows as the DuckDB table', async () => {
    for (const [i, units] of runs.entries()) {
      await run(parquetSink(), `r${i}`, units);
      await run(duckdbSink(), `r${i}`, units);
      const [pq, duck] = [await output(parquet()), await output('t', db())];
      expect(pq.types).toEqual(duck.types);
      expect(pq.rows).toEqual(duck.rows);
    }
    expect(await columnTypes(`SELECT * FROM ${parquet()}`)).toEqual({
      id: 'BIGINT',
      fraction: 'DOUBLE',
      text: 'VARCHAR',
      offset: 'VARCHAR',
      s: 'STRUCT(a BIGINT, b VARCHAR)',
      l: 'STRUCT(a BIGINT, b DOUBLE)[]',
      struct_text: 'JSON',
      // DuckDB's union cannot read the first files' VARCHAR as JSON: the publish rewrites them.
      text_struct: 'JSON',
      nested: 'STRUCT(t JSON)',
      // The table converted 1 to 1.0, then to '1.0': the first file is rewritten along that path.
      chain: 'VARCHAR',
      day_chain: 'VARCHAR',
      list_chain: 'STRUCT(v JSON)[]',
      day: 'TIMESTAMP',
      // Null in every row of the first run: no column until a value came (as in the table).
      nulls: 'BIGINT',
      added: 'BOOLEAN',
    });
    // The offset was applied before the column became text.
    expect((await query(`SELECT "offset" FROM ${parquet()} WHERE id = 1`))[0]).toEqual({
      offset: '2024-01-02 01:04:05',
    });
  });

  it('rewrites earlier files only for a widening into text or JSON, partitioned ones too, and says so', async () => {
    const logs: string[] = [];
    const runWith = async (runId: string, rows: Row[]): Promise<void> => {
      const sink = parquetSink({ partition_by: ['cc'] });
      const ctx = sinkContext(dir, { fresh: false });
      await sink.open(ctx);
      await sink.writeUnit(unit(runId), batches(rows), NO_CHECKPOINT);
      await sink.finish();
      await sink.close();
      logs.push(ctx.logs.join('\n'));
    };
    await runWith('a', [
      { id: 1, cc: 'US', s: 'x', n: 1 },
      { id: 2, cc: 'DE', s: 'y', n: 2 },
    ]);
    const before = (await manifest()).units['run1/a']!.files;
    expect(before).toHaveLength(2);
    await runWith('b', [{ id: 3, cc: 'US', s: [1, 2], n: 3 }]);
    await runWith('c', [{ id: 4, cc: 'FR', s: null, n: 1.5 }]);
    expect((await manifest()).units['run1/a']!.files).toEqual(before);
    expect(logs[1]).toMatch(/rewrote 2 earlier file\(s\) for columns that became text or JSON/);
    expect(logs[2]).not.toMatch(/rewrote/);
    const all = `read_parquet('${glob()}', union_by_name = true, hive_partitioning = true)`;
    expect(await query(`SELECT id, cc, s::VARCHAR AS s, n FROM ${all} ORDER BY id`)).toEqual([
      { id: 1, cc: 'US', s: '"x"', n: 1 },
      { id: 2, cc: 'DE', s: '"y"', n: 2 },
      { id: 3, cc: 'US', s: '[1,2]', n: 3 },
      { id: 4, cc: 'FR', s: null, n: 1.5 },
    ]);
  });
});

async function manifest(): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(dir, 'pq', '_sluice_manifest.json'), 'utf8')) as Manifest;
}

const declared: DeclaredSchema = [
  { name: 'id', type: BIGINT, nullable: false, description: 'id' },
  { name: 'at', type: TIMESTAMP, nullable: true, description: 'when' },
  { name: 'day', type: DATE, nullable: true, description: 'day' },
  { name: 'price', type: DOUBLE, nullable: true, description: 'a price' },
  { name: 'info', type: structOf([['a', VARCHAR]]), nullable: true, description: 'nested' },
  { name: 'tags', type: listOf(VARCHAR), nullable: true, description: 'tags' },
];

describe('parquet sink: declared columns', () => {
  it('every file has every declared column with its type, in declaration order, then the inferred ones', async () => {
    // Optional fields all absent, whole prices, then every field present.
    await run(parquetSink(), 'r0', [[{ extra: 'e', id: 1, price: 3 }]], declared);
    expect(await columnTypes(`SELECT * FROM ${parquet()}`)).toEqual({
      id: 'BIGINT',
      at: 'TIMESTAMP',
      day: 'DATE',
      price: 'DOUBLE',
      info: 'STRUCT(a VARCHAR)',
      tags: 'VARCHAR[]',
      extra: 'VARCHAR',
    });
    const full = {
      id: 2,
      at: new Date('2024-01-02T03:04:05Z'),
      day: new DateOnly('2024-01-02'),
      price: 4.5,
      info: { a: 'x' },
      tags: ['t'],
    };
    await run(parquetSink(), 'r1', [[full]], declared);
    const files = (await query(`SELECT file FROM glob('${glob()}')`)).map((r) => String(r.file));
    expect(files).toHaveLength(2);
    for (const f of files)
      expect(Object.keys(await columnTypes(`SELECT * FROM read_parquet('${f}')`))).toEqual([
        'id',
        'at',
        'day',
        'price',
        'info',
        'tags',
        'extra',
      ]);
    expect(await query(`SELECT id, "at", "day", price, info, tags FROM ${parquet()} ORDER BY id`)).toEqual([
      { id: 1, at: null, day: null, price: 3, info: null, tags: null },
      {
        id: 2,
        at: '2024-01-02T03:04:05.000Z',
        day: '2024-01-02T00:00:00.000Z',
        price: 4.5,
        info: { a: 'x' },
        tags: ['t'],
      },
    ]);
  });
});

describe('parquet sink: columns as committed, changes, checkpoints', () => {
  it('currentColumns is undefined until a row is committed, then the dataset as staged and published', async () => {
    const sink = parquetSink();
    await sink.open(sinkContext(dir, { fresh: false }));
    expect(await sink.currentColumns()).toBeUndefined();
    await sink.writeUnit(unit('empty'), batches([]), NO_CHECKPOINT);
    expect(await sink.currentColumns()).toBeUndefined();
    await sink.writeUnit(unit('a'), batches([{ id: 1, nothing: null, s: { a: 1, b: null } }]), NO_CHECKPOINT);
    const staged = await sink.currentColumns();
    expect(Object.fromEntries([...staged!].map(([k, t]) => [k, describeType(t)]))).toEqual({
      id: 'BIGINT',
      s: 'STRUCT<{a: BIGINT}>',
    });
    await sink.finish();
    await sink.close();
    const reopened = parquetSink();
    await reopened.open(sinkContext(dir, { fresh: false }));
    expect(await reopened.currentColumns()).toEqual(staged);
    await reopened.close();
  });

  it('reports the columns a commit added or widened, in DuckDB type names, nested paths included', async () => {
    const sink = parquetSink();
    await sink.open(sinkContext(dir, { fresh: false }));
    const first = await sink.writeUnit(
      unit('a'),
      batches([{ id: 1, v: 1, s: { a: 1 }, l: [{ x: 1 }] }]),
      NO_CHECKPOINT,
    );
    expect(first.schemaChanges).toBeUndefined();
    await sink.finish();
    await sink.close();
    const next = parquetSink();
    await next.open(sinkContext(dir, { fresh: false }));
    const same = await next.writeUnit(unit('b'), batches([{ id: 2, v: 3 }]), NO_CHECKPOINT);
    expect(same.schemaChanges).toBeUndefined();
    const r = await next.writeUnit(
      unit('c'),
      batches([{ id: 3, v: 1.5, s: { a: 1, b: 'x' }, l: [{ x: 'y' }], n: true }]),
      NO_CHECKPOINT,
    );
    expect(r.schemaChanges).toEqual([
      { column: 'v', change: 'widened', from: 'BIGINT', to: 'DOUBLE' },
      { column: 's.b', change: 'added', to: 'VARCHAR' },
      { column: 'l[].x', change: 'widened', from: 'BIGINT', to: 'VARCHAR' },
      { column: 'n', change: 'added', to: 'BOOLEAN' },
    ]);
    await next.finish();
    await next.close();
  });
});
