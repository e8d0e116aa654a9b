/** Shared helpers of the sink tests: contexts, batches, and reading outputs back with DuckDB. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Batch, Logger, Row, SinkContext, WorkUnit } from '../../src/core/types.js';
import { DateOnly } from '../../src/core/values.js';

export interface TestContext extends SinkContext {
  logs: string[];
}

export function sinkContext(baseDir: string, opts: { fresh?: boolean; pipeline?: string } = {}): TestContext {
  const logs: string[] = [];
  const log: Logger = {
    debug: () => undefined,
    info: (m) => logs.push(`info: ${m}`),
    warn: (m) => logs.push(`warn: ${m}`),
    error: (m) => logs.push(`error: ${m}`),
  };
  return {
    log,
    logs,
    deadLetter: () => undefined,
    baseDir,
    pipeline: opts.pipeline ?? 'test',
    fresh: opts.fresh ?? true,
  };
}

const made: string[] = [];

/** A fresh directory under the OS temp dir, removed by `removeTempDirs`. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-sinks-'));
  made.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(made.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

export function unit(id: string): WorkUnit {
  return { id: `run1/${id}`, params: {} };
}

export async function* batches(...bs: Batch[]): AsyncIterable<Batch> {
  for (const b of bs) yield b;
}

/** Batches that fail after the first one: a source that broke mid-unit. */
export async function* failingBatches(first: Batch): AsyncIterable<Batch> {
  yield first;
  throw new Error('source broke mid-unit');
}

/** Rows with every kind of value a sink must type: nested STRUCT/LIST, TIMESTAMP, DATE, nulls. */
export function richRows(): Row[] {
  return [
    {
      id: 'a',
      n: 1,
      score: 1.5,
      ok: true,
      at: new Date('2024-01-02T03:04:05.678Z'),
      day: new DateOnly('2024-02-29'),
      funding: { rounds: 2, last: new Date('2020-05-06T07:08:09.000Z'), kind: null },
      tags: ['x', 'y'],
      people: [
        { name: 'p1', age: 30 },
        { name: 'p2', age: null },
      ],
      note: null,
    },
    {
      id: 'b',
      n: null,
      score: null,
      ok: false,
      at: null,
      day: null,
      funding: null,
      tags: [],
      people: null,
      note: 'text "quoted" é',
    },
  ];
}

/** What `richRows` reads back as, after `normalize`. */
export const RICH_BACK = [
  {
    id: 'a',
    n: 1,
    score: 1.5,
    ok: true,
    at: '2024-01-02T03:04:05.678Z',
    day: '2024-02-29T00:00:00.000Z',
    funding: { rounds: 2, last: '2020-05-06T07:08:09.000Z' },
    tags: ['x', 'y'],
    people: [
      { name: 'p1', age: 30 },
      { name: 'p2', age: null },
    ],
    note: null,
  },
  {
    id: 'b',
    n: null,
    score: null,
    ok: false,
    at: null,
    day: null,
    funding: null,
    tags: [],
    people: null,
    note: 'text "quoted" é',
  },
];

/** bigint → number, Date → ISO text, recursively: values comparable with plain literals. */
export function normalize(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(normalize);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = normalize(x);
    return out;
  }
  return v;
}

/** Runs `sql` on an in-memory DuckDB (for reading Parquet/JSONL outputs) or on a database file. */
export async function query(sql: string, file = ':memory:'): Promise<Record<string, unknown>[]> {
  const db = file === ':memory:' ? await DuckDBInstance.create(':memory:') : await DuckDBInstance.fromCache(file);
  const conn = await db.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    const r = await conn.runAndReadAll(sql);
    return r.getRowObjectsJS().map((row) => normalize(row) as Record<string, unknown>);
  } finally {
    conn.closeSync();
    if (file === ':memory:') db.closeSync();
  }
}

/** Column name → DuckDB type as DESCRIBE shows it (JSON shows as JSON). */
export async function columnTypes(sql: string, file = ':memory:'): Promise<Record<string, string>> {
  const rows = await query(`DESCRIBE ${sql}`, file);
  return Object.fromEntries(rows.map((r) => [String(r.column_name), String(r.column_type)]));
}
