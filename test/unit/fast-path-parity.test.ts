/**
 * The fast path (a sink loading the source's raw file natively) and the JS path (the file decoded in JS, rows
 * handed to the sink) must give identical outputs: the same rows with the same column types, for every source
 * format, gzip or not, into every sink. Each case runs a real `file`-source pipeline twice, `fast_path: true` and
 * `fast_path: false`, and reads both outputs back through DuckDB.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { silentLogger } from '../../src/runtime/logger.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { tempDir } from '../support/in-memory.js';

type Row = Record<string, unknown>;

/**
 * Records with what tends to differ between readers: ints and floats (also whole first, fractions later in one
 * column), nulls, missing keys, nested structs, lists of structs and of scalars, ISO timestamps with and without a
 * UTC offset, dates, and dates and timestamps in one column.
 */
const records: Row[] = [
  {
    id: 1,
    name: 'alpha',
    score: 1.5,
    count: 10,
    ok: true,
    tags: ['a', 'b'],
    meta: { k: 1 },
    at: '2024-01-02T03:04:05Z',
    at_local: '2024-01-02T03:04:05+02:00',
    day: '2024-01-02',
    when: '2024-01-02',
    mixed: 1,
    nums: [1, 2],
    deep: { a: { b: 1, c: 'x' }, d: [1.5] },
    people: [{ name: 'p', age: 30 }],
  },
  {
    id: 2,
    name: 'beta, "quoted"',
    score: 2,
    count: 0,
    ok: false,
    tags: [],
    meta: { k: 2, extra: 'x' },
    at: null,
    at_local: '2024-06-30T23:59:59.123-05:30',
    day: null,
    when: '2024-01-02T03:04:05Z',
    mixed: 2.5,
    nums: [2.5],
    deep: { a: { b: 2 } },
    people: [
      { name: 'q', age: 1.5 },
      { name: 'r', age: null, note: 'n' },
    ],
  },
  {
    id: 3,
    name: null,
    score: null,
    count: 12345678901,
    ok: null,
    tags: ['c'],
    meta: null,
    at: '2024-02-03T00:00:00Z',
    at_local: '2024-02-03T00:00:00',
    day: '2024-12-31',
    mixed: 3,
    deep: null,
    people: [],
  },
  { id: 4, name: 'delta', score: -0.25, count: 7, ok: true, tags: null, meta: { k: 4 }, at: '2024-03-04T05:06:07Z' },
  { id: 5, name: 'épsilon ✓', score: 3.75, count: 5, ok: false, tags: ['d', 'e', 'f'], meta: { k: 5 } },
];

function csvText(rows: Row[]): string {
  const cols = Object.keys(rows[0]!);
  const cell = (v: unknown): string => {
    // The service writes nested values as JSON text: `["a","b"]`, `{"k":1}`.
    const s = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(','), ...rows.map((r) => cols.map((c) => cell(r[c])).join(','))].join('\n') + '\n';
}

const inputs = {
  jsonl: records.map((r) => JSON.stringify(r)).join('\n') + '\n',
  json: JSON.stringify(records, null, 1),
  csv: csvText(records),
};
type Format = keyof typeof inputs;
type SinkType = 'duckdb' | 'parquet' | 'jsonl';

const root = tempDir();
const inDir = path.join(root, 'in');
mkdirSync(inDir);
for (const [format, text] of Object.entries(inputs)) {
  writeFileSync(path.join(inDir, `data.${format}`), text);
  writeFileSync(path.join(inDir, `data.${format}.gz`), gzipSync(text));
}
afterAll(() => rm(root, { recursive: true, force: true }));

function sinkYaml(sink: SinkType, name: string): string {
  if (sink === 'duckdb') return `{ type: duckdb, path: out/${name}.duckdb, table: t }`;
  return `{ type: ${sink}, path: out/${name} }`;
}

/** Sinks that load JSONL natively (`capabilities.nativeFormats`): there the fast path must really be taken. */
const nativeJsonl: SinkType[] = ['duckdb', 'parquet', 'jsonl'];

async function run(format: Format, gz: boolean, sink: SinkType, fast: boolean): Promise<string> {
  const name = `${format}${gz ? '_gz' : ''}_${sink}_${fast ? 'fast' : 'js'}`;
  const summary = await runFile(name, `in/data.${format}${gz ? '.gz' : ''}`, format, sink, fast);
  expect(summary.records).toBe(records.length);
  expect(summary.deadLetters).toBe(0);
  expect(summary.nativeFallbacks).toBe(0);
  expect(summary.nativeLoads).toBe(fast && format === 'jsonl' && nativeJsonl.includes(sink) ? 1 : 0);
  return name;
}

async function runFile(name: string, input: string, format: Format, sink: SinkType, fast: boolean) {
  const file = path.join(root, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'version: 1',
      `name: ${name}`,
      'service: { base_url: emulator, api_key: emulator-key }',
      `source: { type: file, paths: [${input}], format: ${format} }`,
      `fast_path: ${fast}`,
      `sink: ${sinkYaml(sink, name)}`,
      '',
    ].join('\n'),
  );
  return runPipeline(
    await loadPipeline(file),
    { fresh: false, logFormat: 'text', quiet: true, progress: false },
    { log: silentLogger },
  );
}

interface Output {
  types: [string, string][];
  rows: Row[];
}

/** JSON-comparable values: DuckDB's BIGINT, DECIMAL, timestamps and lists as plain JSON. */
function plain(v: unknown): unknown {
  return JSON.parse(
    JSON.stringify(v, (_k, x: unknown) =>
      typeof x === 'bigint'
        ? Number.isSafeInteger(Number(x))
          ? Number(x)
          : x.toString()
        : x instanceof Date
          ? x.toISOString()
          : x,
    ),
  );
}

async function readBack(sink: SinkType, name: string): Promise<Output> {
  const out = path.join(root, 'out', name);
  const relation =
    sink === 'duckdb'
      ? 't'
      : sink === 'parquet'
        ? `read_parquet('${out}/**/*.parquet', union_by_name = true)`
        : `read_json_auto('${out}/**/*.jsonl*', format = 'newline_delimited', union_by_name = true)`;
  // The sinks share one instance per database file in this process: read through the same one.
  const instance = sink === 'duckdb' ? await DuckDBInstance.fromCache(`${out}.duckdb`) : await DuckDBInstance.create();
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    const described = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${relation}`)).getRowObjectsJS();
    const rows = (await conn.runAndReadAll(`SELECT * FROM ${relation} ORDER BY id`)).getRowObjectsJS();
    return {
      types: described.map((d) => [String(d.column_name), String(d.column_type)]),
      rows: rows.map((r) => plain(r) as Row),
    };
  } finally {
    conn.closeSync();
    if (sink !== 'duckdb') instance.closeSync();
  }
}

/** Outputs by case label, for the comparison across sinks below. */
const outputs = new Map<string, Output>();

const formats: Format[] = ['jsonl', 'json', 'csv'];
const sinks: SinkType[] = ['duckdb', 'parquet', 'jsonl'];
const cases = formats.flatMap((format) =>
  [false, true].flatMap((gz) =>
    sinks.map((sink) => ({ format, gz, sink, label: `${format}${gz ? '.gz' : ''} → ${sink}` })),
  ),
);

// Cases write to outputs of their own, so they run side by side.
describe.concurrent('fast path and JS path give identical outputs', () => {
  it.each(cases)('$label', async ({ format, gz, sink }) => {
    const [fast, js] = (await Promise.all(
      [true, false].map(async (f) => readBack(sink, await run(format, gz, sink, f))),
    )) as [Output, Output];
    outputs.set(`${format}${gz ? '.gz' : ''} → ${sink}`, js);
    expect(fast.types).toEqual(js.types);
    expect(fast.rows).toEqual(js.rows);
    expect(fast.rows).toHaveLength(records.length);
    // The CSV cells that hold JSON are arrays and objects again on both paths, not text.
    if (format === 'csv') {
      expect(fast.rows[0]!.tags).toEqual(['a', 'b']);
      expect(fast.rows[0]!.meta).toMatchObject({ k: 1 });
    }
  });
});

// The same records give the same column types in every typed sink: one inference, one mapping (duckdb-types.ts).
describe('every sink types the same records alike', () => {
  it.each(formats)('%s: DuckDB table and Parquet files have the same columns, types and values', (format) => {
    const duck = outputs.get(`${format} → duckdb`);
    const pq = outputs.get(`${format} → parquet`);
    expect(duck && pq).toBeDefined();
    expect(pq!.types).toEqual(duck!.types);
    expect(pq!.rows).toEqual(duck!.rows);
    if (format !== 'csv')
      expect(Object.fromEntries(duck!.types)).toMatchObject({
        at: 'TIMESTAMP',
        at_local: 'TIMESTAMP',
        day: 'DATE',
        when: 'TIMESTAMP',
        mixed: 'DOUBLE',
        nums: 'DOUBLE[]',
        deep: 'STRUCT(a STRUCT(b BIGINT, c VARCHAR), d DOUBLE[])',
        people: 'STRUCT("name" VARCHAR, age DOUBLE, note VARCHAR)[]',
      });
    // The offset is applied: 03:04:05+02:00 is 01:04:05 UTC.
    expect(duck!.rows[0]!.at_local).toBe('2024-01-02T01:04:05.000Z');
  });
});

/**
 * Lines JSON.parse reads but a native reader would not, as the JS path reads them: bytes that are not UTF-8 (read
 * with replacement characters) in every sink, and a key twice in an object (its last value) where DuckDB reads the
 * text (its reader refuses duplicate keys; the jsonl sink copies such a line as it came, for readers that take the
 * last value, which DuckDB's is not).
 */
describe('lines only JSON.parse reads give the JS path’s rows on the fast path too', () => {
  const good = records.slice(0, 2).map((r) => JSON.stringify(r));
  const notUtf8 = Buffer.concat([Buffer.from('{"id":6,"name":"bad '), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  const twice = '{"id":7,"name":"first","name":"second","score":1.5}';
  writeFileSync(
    path.join(inDir, 'hostile-utf8.jsonl'),
    Buffer.concat([Buffer.from(`${good.join('\n')}\n`), notUtf8, Buffer.from('\n')]),
  );
  writeFileSync(path.join(inDir, 'hostile-keys.jsonl'), `${good.join('\n')}\n${twice}\n`);
  const hostile = [
    ...sinks.map((sink) => ({ input: 'hostile-utf8', sink })),
    ...(['duckdb', 'parquet'] as const).map((sink) => ({ input: 'hostile-keys', sink })),
  ];
  it.each(hostile)('$input → $sink', async ({ input, sink }) => {
    const outputs = await Promise.all(
      [true, false].map(async (fast) => {
        const name = `${input.replace('-', '_')}_${sink}_${fast ? 'fast' : 'js'}`;
        const summary = await runFile(name, `in/${input}.jsonl`, 'jsonl', sink, fast);
        expect(summary.records).toBe(3);
        expect(summary.deadLetters).toBe(0);
        return readBack(sink, name);
      }),
    );
    const [fast, js] = outputs as [Output, Output];
    expect(fast.types).toEqual(js.types);
    expect(fast.rows).toEqual(js.rows);
    expect(js.rows).toHaveLength(3);
  });
});
