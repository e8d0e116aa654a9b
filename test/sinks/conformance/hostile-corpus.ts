/**
 * The hostile-record corpus: records scraped from the open web that some sink cannot store as they are, beside
 * records that look odd but every sink stores. Each case says, per sink type, whether the record is stored or goes
 * to the dead letters, and what the letter's reason must name. Written from the stores' own limits (probed, see
 * each sink's `config.ts`, e.g. `duckdbLimits`), not from the judge's code.
 *
 * The records share one file (one unit): a unit is never lost to one record, so every clean record of it commits.
 */

export type SinkType = 'duckdb' | 'postgres' | 'jsonl' | 'parquet' | 'clickhouse';

export interface HostileCase {
  id: number;
  what: string;
  /** The line as the file holds it (a record with duplicate keys has no JS object form). */
  line: string;
  /** Sinks that refuse it, with what the reason names; every other sink stores it. */
  refused: Partial<Record<SinkType, RegExp>>;
  /** Only in the full corpus (`SLUICE_HOSTILE=full`): too heavy for `npm test`. */
  full?: boolean;
}

/** `{a:{a:…{a:1}}}` with `levels` objects: the record holding it is `levels` levels deep. */
function nested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

const line = (o: Record<string, unknown>): string => JSON.stringify(o);

/** DuckDB's memory_limit in the scenario: its largest record is an eighth of it (sinks/duckdb/config.ts). */
export const DUCKDB_MEMORY_LIMIT = '48MB';
/** A value over the DuckDB sink's record size at that memory limit, under every other sink's. */
const OVER_DUCKDB_RECORD = 6.5 * 2 ** 20;
/** Over DuckDB's default `maximum_object_size` (16 MB), which stopped Parquet's publish (issue 23). */
const OVER_DUCKDB_OBJECT = 40 * 2 ** 20;

const identifiers: SinkType[] = ['duckdb', 'parquet', 'postgres', 'clickhouse'];
const refusedBy = (types: SinkType[], re: RegExp): Partial<Record<SinkType, RegExp>> =>
  Object.fromEntries(types.map((t) => [t, re]));

export const CORPUS: readonly HostileCase[] = [
  { id: 1, what: 'a plain record', line: line({ id: 1, cc: 'US', v: 'plain' }), refused: {} },
  {
    id: 2,
    what: 'keys with quotes, backslashes, control characters, dots, digits, emoji',
    line: line({
      id: 2,
      cc: 'DE',
      'a"b': 1,
      "it's": 2,
      'back\\slash': 3,
      'new\nline': 4,
      'tab\tkey': 5,
      'émoji😀': 6,
      'a.b': 7,
      '123': 8,
      nested: { 'x"y': 1, "q'r": 2 },
    }),
    refused: {},
  },
  { id: 3, what: 'nesting 60 levels deep', line: line({ id: 3, cc: 'a/b', deep60: nested(59) }), refused: {} },
  { id: 4, what: 'a key of exactly 63 bytes', line: line({ id: 4, cc: 'FR', ['k'.repeat(63)]: 1 }), refused: {} },
  { id: 5, what: 'an empty partition value', line: line({ id: 5, cc: '', v: 'x' }), refused: {} },
  {
    id: 6,
    what: 'duplicate keys in one object (the last wins, as JSON.parse reads it)',
    line: '{"id":6,"cc":"IT","dup":1,"dup":2}',
    refused: {},
  },
  { id: 10, what: 'an empty key', line: line({ id: 10, '': 1 }), refused: refusedBy(identifiers, /empty/) },
  { id: 11, what: 'a NUL in a key', line: line({ id: 11, 'a\0b': 1 }), refused: refusedBy(identifiers, /NUL/) },
  {
    id: 12,
    what: 'keys that differ only in case, in one record',
    line: line({ id: 12, Name: 1, name: 2 }),
    refused: refusedBy(['duckdb', 'parquet'], /case/),
  },
  {
    id: 13,
    what: 'a key that differs only in case from an earlier record’s (`v`)',
    line: line({ id: 13, V: 'x' }),
    refused: refusedBy(['duckdb', 'parquet'], /case/),
  },
  {
    id: 14,
    what: 'a key of 64 bytes',
    line: line({ id: 14, ['k'.repeat(64)]: 1 }),
    refused: { postgres: /63 bytes/ },
  },
  {
    id: 15,
    what: 'a key of 22 characters, 66 bytes',
    line: line({ id: 15, ['€'.repeat(22)]: 1 }),
    refused: { postgres: /63 bytes/ },
  },
  {
    id: 16,
    what: 'a data column named _sluice_seq',
    line: line({ id: 16, _sluice_seq: 1 }),
    refused: { postgres: /reserved/ },
  },
  { id: 17, what: 'a data column named xmin', line: line({ id: 17, xmin: 1 }), refused: { postgres: /reserved/ } },
  {
    id: 18,
    what: 'an empty key inside an object (a struct field)',
    line: line({ id: 18, n: { '': 1 } }),
    refused: refusedBy(['duckdb', 'parquet'], /empty/),
  },
  {
    id: 19,
    what: 'nesting 200 levels deep (1.2 KB)',
    line: line({ id: 19, deep: nested(199) }),
    refused: refusedBy(['duckdb', 'parquet'], /nest/),
  },
  {
    id: 20,
    what: 'nesting 1,500 levels deep',
    line: line({ id: 20, deeper: nested(1499) }),
    refused: refusedBy(['duckdb', 'parquet', 'postgres', 'jsonl', 'clickhouse'], /nest/),
  },
  {
    id: 21,
    what: 'a partition value of 300 bytes',
    line: line({ id: 21, cc: 'x'.repeat(300) }),
    refused: { parquet: /partition.*255/ },
  },
  {
    id: 22,
    what: 'a partition value of 50 characters that is 300 bytes as a directory name',
    line: line({ id: 22, cc: 'é'.repeat(50) }),
    refused: { parquet: /partition.*255/ },
  },
  {
    id: 23,
    what: 'the partition value __HIVE_DEFAULT_PARTITION__ (a reader takes it for null)',
    line: line({ id: 23, cc: '__HIVE_DEFAULT_PARTITION__' }),
    refused: { parquet: /partition.*null/ },
  },
  {
    id: 24,
    what: 'the partition value "NULL" (a reader takes it for null)',
    line: line({ id: 24, cc: 'NULL' }),
    refused: { parquet: /partition.*null/ },
  },
  {
    id: 25,
    what: 'an object as partition value',
    line: line({ id: 25, cc: { a: 1 } }),
    refused: { parquet: /partition/ },
  },
  {
    id: 26,
    what: 'a record over the DuckDB sink’s record size (an eighth of its memory_limit)',
    line: line({ id: 26, big: 'b'.repeat(OVER_DUCKDB_RECORD) }),
    refused: { duckdb: /bytes/ },
  },
  {
    id: 27,
    what: '220 keys (DuckDB holds as many columns as its memory_limit has room for: 200 at 48MB)',
    line: line(Object.fromEntries([['id', 27], ...Array.from({ length: 219 }, (_, i) => [`w${i}`, i])])),
    refused: { duckdb: /columns/ },
  },
  {
    id: 29,
    what: '1,601 keys (a Postgres table holds 1,600 columns, 1,599 under merge)',
    line: line(Object.fromEntries([['id', 29], ...Array.from({ length: 1600 }, (_, i) => [`c${i}`, `v${i}`])])),
    refused: { postgres: /columns/, duckdb: /columns/, clickhouse: /columns/ },
    full: true,
  },
  {
    id: 30,
    what: '1,100 numbers (8.8 KB of a Postgres row, which holds 8,160 bytes)',
    line: line(Object.fromEntries([['id', 30], ...Array.from({ length: 1099 }, (_, i) => [`n${i}`, i])])),
    refused: { postgres: /row of about/, duckdb: /columns/, clickhouse: /columns/ },
    full: true,
  },
  {
    id: 28,
    what: 'a 40 MB string (over DuckDB’s default maximum_object_size, which stuck Parquet outputs)',
    line: line({ id: 28, huge: 'h'.repeat(OVER_DUCKDB_OBJECT) }),
    refused: { duckdb: /bytes/ },
    full: true,
  },
];

/**
 * Day 2: clean records only; the run after the hostile one must be green and publish. The file reaches the native
 * loads (DuckDB, JSONL) whole: its key twice in one object is what DuckDB's `read_json` itself refuses.
 */
export const DAY_TWO: readonly string[] = [
  line({ id: 100, cc: 'US', v: 'next day' }),
  line({ id: 101, cc: 'DE' }),
  '{"id":102,"cc":"US","dup":3,"dup":4}',
];
