import { describe, expect, it } from 'vitest';
import type { Row, StoreLimits } from '../../src/core/types.js';
import { BIGINT, listOf, structOf, VARCHAR, type LogicalType } from '../../src/core/logical-type.js';
import { escapedBytes, RecordJudge, type Verdict } from '../../src/schema/storable.js';

const DUCK: StoreLimits = { store: 'DuckDB', names: 'all', caseInsensitive: true, maxNesting: 3, maxRecordBytes: 1000 };
const PG: StoreLimits = {
  store: 'Postgres',
  names: 'top',
  maxNameBytes: 8,
  reservedNames: { xmin: 'a system column' },
  maxColumns: 4,
  maxRowBytes: 100,
  maxNesting: 3,
  maxRecordBytes: 1000,
};
const FILES: StoreLimits = { store: 'JSONL', names: 'none', maxNesting: 2, maxRecordBytes: 200 };

const refused = (v: Verdict): string => ('refused' in v ? v.refused : '(stored)');
const nest = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

describe('the record judge', () => {
  it('refuses names a store that names columns and fields cannot hold, at any depth', () => {
    const j = new RecordJudge(DUCK);
    expect(refused(j.judge({ '': 1 }))).toMatch(/empty key: DuckDB names cannot be empty/);
    expect(refused(j.judge({ 'a\0b': 1 }))).toMatch(/"a\\u0000b" holds a NUL/);
    expect(refused(j.judge({ s: { '': 1 } }))).toMatch(/empty key \(in s\)/);
    expect(refused(j.judge({ l: [{ ok: 1 }, { 'x\0': 1 }] }))).toMatch(/in l\[\]/);
    // Keys with null values name nothing.
    expect(j.judge({ '': null, v: 1 })).toEqual({ row: { '': null, v: 1 } });
  });

  it('keeps one spelling per name where names ignore case: in a record, across records, against the store', () => {
    const j = new RecordJudge(DUCK);
    j.know(
      new Map<string, LogicalType>([
        ['Known', BIGINT],
        ['s', structOf([['Inner', VARCHAR]])],
        ['l', listOf(structOf([['X', BIGINT]]))],
      ]),
    );
    expect(refused(j.judge({ known: 1 }))).toMatch(/"known" differs only in case from "Known"/);
    expect(refused(j.judge({ s: { inner: 'a' } }))).toMatch(/\(in s\)/);
    expect(refused(j.judge({ l: [{ x: 1 }] }))).toMatch(/"x" \(in l\[\]\) differs only in case from "X"/);
    expect(refused(j.judge({ Name: 1, name: 2 }))).toMatch(/"name" differs only in case from "Name"/);
    // The refused record claimed nothing: `name` is free for the next record, which then holds it.
    expect('row' in j.judge({ name: 1 })).toBe(true);
    expect(refused(j.judge({ NAME: 1 }))).toMatch(/from "name"/);
    // The same key in another place is another name.
    expect('row' in j.judge({ s: { name: 1 } })).toBe(true);
  });

  it('judges only top-level names where objects are stored as JSON; bytes, reserved names, columns and row size', () => {
    const j = new RecordJudge(PG);
    expect('row' in j.judge({ o: { '': 1, 'a\0': 2 } })).toBe(true);
    expect(refused(j.judge({ ['€'.repeat(3)]: 1 }))).toMatch(/is 9 bytes: Postgres names hold at most 8 bytes/);
    expect(refused(j.judge({ xmin: 1 }))).toMatch(/"xmin" is reserved by Postgres \(a system column\)/);
    // Case matters here: two columns.
    expect('row' in j.judge({ a: 1, A: 2 })).toBe(true);
    j.know(new Map([['k', BIGINT]]));
    expect(refused(j.judge({ b: 1 }))).toMatch(/would be column 5: Postgres holds at most 4 columns/);
    const wide = new RecordJudge({ ...PG, maxColumns: 100 });
    // 24 bytes of header, one of the null bitmap per 8 columns, 8 per number.
    expect('row' in wide.judge(Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`n${i}`, i])))).toBe(true);
    expect(refused(wide.judge(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`n${i}`, i]))))).toMatch(
      /a row of about 106 bytes in the table's page: Postgres fits at most 100/,
    );
  });

  it('keys are data where the store names nothing; nesting and size are judged everywhere', () => {
    const j = new RecordJudge(FILES);
    expect('row' in j.judge({ '': 1, 'a\0': 2, A: 1, a: 2 })).toBe(true);
    expect('row' in j.judge({ d: nest(2) })).toBe(true);
    expect(refused(j.judge({ d: nest(3) }))).toMatch(
      /nested more than 2 levels deep \(at d\[\]\[\]\): JSONL holds at most 2/,
    );
    expect(refused(j.judge({ d: { e: { f: {} } } }))).toMatch(/at d\.e/);
    expect(refused(j.judge({ t: 'x'.repeat(300) }))).toMatch(
      /308 bytes as JSON: JSONL reads records of at most 200 bytes/,
    );
    // A character can take 6 bytes of JSON: measured, not guessed.
    expect(refused(j.judge({ t: '\u0001'.repeat(40) }))).toMatch(/248 bytes/);
    // A Date is a value, not an object to descend into.
    expect('row' in j.judge({ at: new Date(0), deep: { x: new Date(0) } })).toBe(true);
  });

  it('judges a record parsed from a line as it judges the record: nesting looked at, size bounded by the line', () => {
    const lines = [
      '{"a":1}',
      `{"a":${JSON.stringify(nest(2))}}`,
      `{"a":${JSON.stringify(nest(3))}}`,
      '{"a":{"b":{"c":1}}}',
      '{"a":[{"b":[1]}]}',
      '{"a":[1,2,{"b":{}}],"c":"x"}',
      `{"a":"${'y'.repeat(150)}"}`,
      `{"a":"${'y'.repeat(250)}"}`,
      `{"n":[${Array.from({ length: 12 }, () => '1e20').join(',')}]}`,
    ];
    for (const limits of [FILES, { ...FILES, maxRecordBytes: 1 << 20 }, PG]) {
      const judge = new RecordJudge(limits);
      for (const line of lines) {
        const row = JSON.parse(line) as Row;
        expect(judge.refusalOfLine(row, Buffer.byteLength(line)), `${limits.store} ${line}`).toBe(
          new RecordJudge(limits).refusal(row),
        );
      }
    }
    // The cases above do both: a record refused for its nesting, one for its size (1e20 grows to 21 digits).
    const files = new RecordJudge(FILES);
    expect(files.refusalOfLine(JSON.parse(lines[2]!) as Row, lines[2]!.length)).toMatch(/nested more than 2 levels/);
    expect(files.refusalOfLine(JSON.parse(lines[8]!) as Row, lines[8]!.length)).toMatch(/bytes as JSON/);
  });

  it('refuses partition values that are no directory name, or that a reader takes for null', () => {
    const j = new RecordJudge({
      ...FILES,
      maxRecordBytes: 10_000,
      partitions: { columns: ['cc'], maxSegmentBytes: 255, maxPathBytes: 300 },
    });
    expect('row' in j.judge({ cc: 'x'.repeat(252) })).toBe(true); // cc=xxx… is 255 bytes
    expect(refused(j.judge({ cc: 'x'.repeat(253) }))).toMatch(/would be 256 bytes, over the 255/);
    expect('row' in j.judge({ cc: 'é'.repeat(42) })).toBe(true); // each é is %C3%A9
    expect(refused(j.judge({ cc: 'é'.repeat(43) }))).toMatch(/261 bytes/);
    expect(refused(j.judge({ cc: 'nUlL' }))).toMatch(/takes the directory "cc=nUlL" for null/);
    expect(refused(j.judge({ cc: '__HIVE_DEFAULT_PARTITION__' }))).toMatch(/for null/);
    expect(refused(j.judge({ cc: [1] }))).toMatch(/partition value of "cc" is a list/);
    expect('row' in j.judge({ cc: null })).toBe(true);
    expect('row' in j.judge({ cc: 12.5 })).toBe(true);
    expect('row' in j.judge({ cc: 'a/b?' })).toBe(true);
  });

  it('counts escaped bytes as a hive directory writes them', () => {
    expect(escapedBytes('Az09-._~')).toBe(8);
    expect(escapedBytes('a b/%')).toBe(1 + 3 + 1 + 3 + 3);
    expect(escapedBytes('é')).toBe(6);
    expect(escapedBytes('€')).toBe(9);
    expect(escapedBytes('😀')).toBe(12);
  });

  it('repairs names and text under `repair`, leaving the record it was given untouched', () => {
    const j = new RecordJudge({ ...PG, maxColumns: 100, maxRowBytes: 10_000 }, 'repair');
    const row: Row = { id: 1, '': 'e', 'a\0b': 2, xmin: 3, averyveryverylongkey: 4, o: { kept: 1 } };
    const v = j.judge(row);
    if (!('row' in v)) throw new Error(v.refused);
    expect(Object.keys(row)).toEqual(['id', '', 'a\0b', 'xmin', 'averyveryverylongkey', 'o']);
    const keys = Object.keys(v.row);
    expect(keys[0]).toBe('id');
    expect(keys).toHaveLength(6);
    for (const k of keys) expect(Buffer.byteLength(k)).toBeLessThanOrEqual(8);
    expect(keys.filter((k) => k === '' || k.includes('\0') || k === 'xmin')).toEqual([]);
    expect(v.row[keys[5]!]).toEqual({ kept: 1 });
    expect(v.repairs).toHaveLength(4);
    expect(v.repairs![0]).toMatch(/^key "" renamed to "_[0-9a-f]{7}" \(an empty key/);
    // The same key is renamed alike in every record.
    const again = j.judge({ '': 'f' });
    expect('row' in again && Object.keys(again.row)).toEqual([keys[1]]);

    const cased = new RecordJudge(DUCK, 'repair');
    const c = cased.judge({ Name: 1, name: 2 });
    expect('row' in c && Object.keys(c.row)).toEqual(['Name', expect.stringMatching(/^name_[0-9a-f]{8}$/)]);

    const texts = new RecordJudge({ ...FILES, maxRecordBytes: 100 }, 'repair');
    const t = texts.judge({ a: 'x'.repeat(500), b: 'short' });
    if (!('row' in t)) throw new Error(t.refused);
    expect(Buffer.byteLength(JSON.stringify(t.row))).toBeLessThanOrEqual(100);
    expect(t.row.b).toBe('short');
    expect(t.repairs).toEqual([expect.stringMatching(/^text at a cut from 500 to \d+ characters/)]);
  });

  it('still refuses under `repair` what renaming and cutting cannot fix', () => {
    const j = new RecordJudge(
      { ...FILES, partitions: { columns: ['cc'], maxSegmentBytes: 255, maxPathBytes: 300 } },
      'repair',
    );
    expect(refused(j.judge({ d: nest(5) }))).toMatch(/nested/);
    expect(refused(j.judge({ cc: 'NULL' }))).toMatch(/null/);
  });

  it('tells a native scan why not, and claims the names of the records it passes', () => {
    const j = new RecordJudge(DUCK);
    expect(j.refusal({ Name: 1 })).toBeUndefined();
    expect(j.refusal({ name: 1 })).toMatch(/differs only in case/);
    expect(refused(j.judge({ name: 1 }))).toMatch(/differs only in case/);
  });
});
