import { describe, expect, it } from 'vitest';
import { columnChangeRefused, fitsColumns, planColumnChanges, type TypeName } from '../../src/schema/column-changes.js';
import { ConflictLog } from '../../src/schema/conflicts.js';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import {
  BIGINT,
  BOOLEAN,
  DOUBLE,
  NULL,
  VARCHAR,
  listOf,
  structOf,
  type LogicalType,
} from '../../src/core/logical-type.js';

/** A mapping like Postgres's: every STRUCT is one JSON column type, whatever its fields. */
const structsAsJson: TypeName = (t) => (t.kind === 'struct' ? 'jsonb' : duckdbType(t));

const cols = (...entries: [string, LogicalType][]): Map<string, LogicalType> => new Map(entries);

describe('planColumnChanges', () => {
  it('adds the columns the table lacks, in the order of the incoming columns, and leaves the table as it was', () => {
    const current = cols(['id', BIGINT]);
    const plan = planColumnChanges(
      current,
      cols(['tags', listOf(VARCHAR)], ['id', BIGINT], ['name', VARCHAR]),
      duckdbType,
    );
    expect(plan.changes).toEqual([
      { kind: 'add', column: 'tags', type: listOf(VARCHAR) },
      { kind: 'add', column: 'name', type: VARCHAR },
    ]);
    expect([...plan.columns.keys()]).toEqual(['id', 'tags', 'name']);
    expect([...current.keys()]).toEqual(['id']);
  });

  it('widens a column whose joined type is another database type, from the table type to the joined one', () => {
    const plan = planColumnChanges(
      cols(['price', BIGINT], ['n', DOUBLE]),
      cols(['price', DOUBLE], ['n', BIGINT]),
      duckdbType,
    );
    expect(plan.changes).toEqual([{ kind: 'widen', column: 'price', from: BIGINT, to: DOUBLE }]);
    expect(plan.columns.get('price')).toBe(DOUBLE);
    expect(plan.columns.get('n')).toBe(DOUBLE);
  });

  it('asks the sink mapping: a struct gaining a field is a widening in DuckDB and no DDL where structs are JSON', () => {
    const current = cols(['details', structOf([['color', NULL]])]);
    const incoming = cols([
      'details',
      structOf([
        ['color', VARCHAR],
        ['size', BIGINT],
      ]),
    ]);
    const joined = structOf([
      ['color', VARCHAR],
      ['size', BIGINT],
    ]);

    const duck = planColumnChanges(current, incoming, duckdbType);
    expect(duck.changes).toEqual([{ kind: 'widen', column: 'details', from: current.get('details'), to: joined }]);

    const json = planColumnChanges(current, incoming, structsAsJson);
    expect(json.changes).toEqual([]);
    // No DDL, but the table's remembered type learns what the data decided.
    expect(json.columns.get('details')).toEqual(joined);
    expect(current.get('details')).toEqual(structOf([['color', NULL]]));
  });

  it('names the case twin of a new column, also one added earlier in the same plan', () => {
    const plan = planColumnChanges(
      cols(['Name', VARCHAR]),
      cols(['name', VARCHAR], ['City', VARCHAR], ['city', VARCHAR]),
      duckdbType,
    );
    expect(plan.changes).toEqual([
      { kind: 'add', column: 'name', type: VARCHAR, caseTwin: 'Name' },
      { kind: 'add', column: 'City', type: VARCHAR },
      { kind: 'add', column: 'city', type: VARCHAR, caseTwin: 'City' },
    ]);
  });

  it('records the fallbacks it decides in the conflict log', () => {
    const conflicts = new ConflictLog();
    const plan = planColumnChanges(cols(['flag', BOOLEAN]), cols(['flag', BIGINT]), duckdbType, conflicts);
    expect(plan.changes).toEqual([{ kind: 'widen', column: 'flag', from: BOOLEAN, to: VARCHAR }]);
    expect(conflicts.list()).toMatchObject([{ path: 'flag', kind: 'text' }]);
  });
});

describe('fitsColumns', () => {
  it('is true exactly when the plan would change nothing', () => {
    const table = cols(['id', BIGINT], ['details', structOf([['color', VARCHAR]])]);
    const wider = cols(['details', structOf([['size', BIGINT]])]);
    expect(fitsColumns(undefined, cols(['id', BIGINT]), duckdbType)).toBe(false);
    expect(fitsColumns(table, cols(['id', BIGINT]), duckdbType)).toBe(true);
    expect(fitsColumns(table, cols(['id', DOUBLE]), duckdbType)).toBe(false);
    expect(fitsColumns(table, cols(['other', BIGINT]), duckdbType)).toBe(false);
    expect(fitsColumns(table, wider, duckdbType)).toBe(false);
    expect(fitsColumns(table, wider, structsAsJson)).toBe(true);
  });
});

describe('columnChangeRefused', () => {
  it('says which change of which table the database refused, why, and how to make the data fit instead', () => {
    const cause = new Error('Conversion Error: could not convert');
    const widen = columnChangeRefused(
      { kind: 'widen', column: 'price', from: BIGINT, to: DOUBLE },
      '"main"."t"',
      'Conversion Error: could not convert',
      cause,
    );
    expect(widen.message).toBe(
      'cannot change column "price" of "main"."t" from BIGINT to DOUBLE: Conversion Error: could not convert',
    );
    expect(widen.hint).toContain('{ type: cast, fields: { price: text } }');
    expect(widen.cause).toBe(cause);
    const add = columnChangeRefused({ kind: 'add', column: 'tags', type: listOf(VARCHAR) }, 't', 'no', cause);
    expect(add.message).toMatch(/^cannot add column "tags" \S.* to t: no$/);
  });
});
