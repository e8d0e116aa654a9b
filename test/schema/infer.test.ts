import { describe, expect, it } from 'vitest';
import { DateOnly } from '../../src/core/values.js';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import { InferredSchema } from '../../src/schema/infer.js';

/** Column → DuckDB type text: the readable form of a schema. */
function types(s: InferredSchema): Record<string, string> {
  return Object.fromEntries([...s.columns].map(([k, t]) => [k, duckdbType(t)]));
}

describe('InferredSchema', () => {
  it('types scalars, timestamps, dates, nested structs and lists', () => {
    const s = new InferredSchema();
    s.observe([
      {
        id: 'a',
        n: 1,
        x: 1.5,
        ok: true,
        at: new Date('2024-01-02T03:04:05.678Z'),
        day: new DateOnly('2024-02-29'),
        funding: { rounds: 2, last: new Date(0) },
        tags: ['a', 'b'],
        people: [{ name: 'p', age: 3 }],
      },
    ]);
    expect(types(s)).toEqual({
      id: 'VARCHAR',
      n: 'BIGINT',
      x: 'DOUBLE',
      ok: 'BOOLEAN',
      at: 'TIMESTAMP',
      day: 'DATE',
      funding: 'STRUCT("rounds" BIGINT, "last" TIMESTAMP)',
      tags: 'VARCHAR[]',
      people: 'STRUCT("name" VARCHAR, "age" BIGINT)[]',
    });
    expect(s.rows).toBe(1);
    expect(s.conflicts.size).toBe(0);
  });

  it('keeps null-only columns and empty lists open until a value decides them', () => {
    const s = new InferredSchema();
    s.observe([{ a: null, l: [], o: { p: null } }]);
    expect(types(s)).toEqual({ a: '"NULL"', l: '"NULL"[]', o: 'STRUCT("p" "NULL")' });
    s.observe([{ a: 'x', l: [{ k: 1 }], o: { p: [1] } }]);
    expect(types(s)).toEqual({ a: 'VARCHAR', l: 'STRUCT("k" BIGINT)[]', o: 'STRUCT("p" BIGINT[])' });
    expect(s.conflicts.size).toBe(0);
  });

  it('widens int → double, date → timestamp, and unions struct fields across batches', () => {
    const s = new InferredSchema();
    s.observe([{ v: 1, d: new DateOnly('2024-01-01'), o: { a: 1 }, l: [1] }]);
    s.observe([{ v: 2.5, d: new Date('2024-01-01T10:00:00Z'), o: { b: 'x' }, l: [0.5] }]);
    expect(types(s)).toEqual({
      v: 'DOUBLE',
      d: 'TIMESTAMP',
      o: 'STRUCT("a" BIGINT, "b" VARCHAR)',
      l: 'DOUBLE[]',
    });
    // Silent widenings are not conflicts.
    expect(s.conflicts.size).toBe(0);
  });

  it('falls back to VARCHAR for scalars of different kinds and to JSON for shapes, and says so', () => {
    const s = new InferredSchema();
    s.observe([{ price: 10, details: { a: 1 }, updates: [{ likes: 3 }] }]);
    s.observe([{ price: 'n/a', details: 'none', updates: [{ likes: 'many' }] }]);
    s.observe([{ price: { amount: 1 } }]);
    expect(types(s)).toEqual({ price: 'JSON', details: 'JSON', updates: 'STRUCT("likes" VARCHAR)[]' });
    expect(s.conflicts.format()).toBe(
      [
        'schema conflicts (3):',
        '  - price: seen BIGINT, VARCHAR, STRUCT → stored as JSON: every value is kept as JSON text (strings quoted); `cast` or `flatten` it to get typed columns',
        '  - details: seen STRUCT, VARCHAR → stored as JSON: every value is kept as JSON text (strings quoted); `cast` or `flatten` it to get typed columns',
        '  - updates[].likes: seen BIGINT, VARCHAR → stored as VARCHAR: values that are not text are kept as their text',
      ].join('\n'),
    );
    expect(s.conflicts.list().map((c) => c.kind)).toEqual(['json', 'json', 'text']);
  });

  it('with objectsAsJson types every object as JSON without looking inside, lists still by their elements', () => {
    const s = new InferredSchema({ objectsAsJson: true });
    s.observe([{ funding: { rounds: 3 }, updates: [{ likes: 3 }], tags: ['a'], nums: [1, 2], name: 'x' }]);
    s.observe([{ funding: { rounds: 'many', Rounds: 1 }, updates: [{ likes: 'many' }], tags: ['b'], nums: [1.5] }]);
    expect(types(s)).toEqual({
      funding: 'JSON',
      updates: 'JSON[]',
      tags: 'VARCHAR[]',
      nums: 'DOUBLE[]',
      name: 'VARCHAR',
    });
    // What is inside an object is not typed, so it cannot conflict (nor its names differ only in case).
    expect(s.conflicts.size).toBe(0);
    // A column that held text and now holds an object is JSON, and that is a conflict as without the option.
    s.observe([{ name: { first: 'x' } }]);
    expect(types(s).name).toBe('JSON');
    expect(s.conflicts.list().map((c) => c.kind)).toEqual(['json']);
  });

  it('reports names that differ only in case', () => {
    const s = new InferredSchema();
    s.observe([
      { Links: 'a', similar: [{ title: 't' }] },
      { links: 'b', similar: [{ Title: 'u' }] },
    ]);
    expect(s.conflicts.caseConflicts().map((c) => [c.path, c.seen])).toEqual([
      ['links', ['Links', 'links']],
      ['similar[].Title', ['title', 'Title']],
    ]);
    expect(s.conflicts.format()).toContain('links: fields Links, links differ only in case');
  });

  it('treats undefined, invalid dates and functions as absent, and notes bigints', () => {
    const s = new InferredSchema();
    s.observe([{ u: undefined, d: new Date('nope'), f: () => 1, b: 10n }]);
    expect(types(s)).toEqual({ u: '"NULL"', d: '"NULL"', f: '"NULL"', b: 'BIGINT' });
    expect(s.sawBigInt).toBe(true);
  });

  it('absorbs another schema as if its rows had been observed, without sharing nodes', () => {
    const a = new InferredSchema();
    a.observe([{ o: { x: 1 }, n: 1 }]);
    const b = new InferredSchema();
    b.observe([{ o: { y: 'q' }, n: 0.5, extra: true }]);
    a.absorb(b.columns, b.conflicts);
    expect(types(a)).toEqual({ o: 'STRUCT("x" BIGINT, "y" VARCHAR)', n: 'DOUBLE', extra: 'BOOLEAN' });
    a.observe([{ o: { z: 1 } }]);
    expect(duckdbType(b.column('o')!)).toBe('STRUCT("y" VARCHAR)');
  });

  it('types ISO text as TIMESTAMP / DATE only when asked, and falls back to text quietly', () => {
    const plain = new InferredSchema();
    plain.observe([{ at: '2024-01-02T03:04:05Z' }]);
    expect(types(plain)).toEqual({ at: 'VARCHAR' });
    const s = new InferredSchema({ temporalText: true });
    s.observe([{ at: '2024-01-02T03:04:05Z', d: '2024-01-02', x: '2024-01-02', bad: '2024-02-30' }]);
    expect(types(s)).toEqual({ at: 'TIMESTAMP', d: 'DATE', x: 'DATE', bad: 'VARCHAR' });
    s.observe([{ at: '2024-01-02 03:04:05.123+05:30', d: null, x: 'not a date' }]);
    expect(types(s)).toEqual({ at: 'TIMESTAMP', d: 'DATE', x: 'VARCHAR', bad: 'VARCHAR' });
    s.observe([{ at: new Date(0) }]);
    expect(types(s)).toEqual({ at: 'TIMESTAMP', d: 'DATE', x: 'VARCHAR', bad: 'VARCHAR' });
    expect(s.conflicts.size).toBe(0);
  });

  it('snapshots do not change with later observations', () => {
    const s = new InferredSchema();
    s.observe([{ o: { a: 1 } }]);
    const snap = s.snapshot();
    s.observe([{ o: { b: 2 } }]);
    expect(duckdbType(snap.get('o')!)).toBe('STRUCT("a" BIGINT)');
    expect(duckdbType(s.column('o')!)).toBe('STRUCT("a" BIGINT, "b" BIGINT)');
  });
});
