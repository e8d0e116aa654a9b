import { describe, expect, it } from 'vitest';
import { duckdbType } from '../../../src/schema/duckdb-types.js';
import {
  BIGINT,
  DOUBLE,
  JSON_TYPE,
  NULL,
  TIMESTAMP,
  VARCHAR,
  describeType,
  listOf,
  structOf,
  type LogicalType,
} from '../../../src/core/logical-type.js';
import {
  datasetColumns,
  schemaChanges,
  textifies,
  unreadableAs,
} from '../../../src/sink-kit/output-files/dataset-schema.js';

const show = (m: ReadonlyMap<string, LogicalType> | undefined): [string, string][] | undefined =>
  m && [...m].map(([k, t]) => [k, describeType(t)]);

describe('dataset columns', () => {
  it('leaves out what only nulls filled, keeps declared columns first with their type', () => {
    const unit = new Map<string, LogicalType>([
      ['extra', BIGINT],
      ['none', NULL],
      ['s', structOf([['open', NULL]])],
      ['l', listOf(NULL)],
      ['id', BIGINT],
    ]);
    expect(show(datasetColumns([unit]))).toEqual([
      ['extra', 'BIGINT'],
      ['id', 'BIGINT'],
    ]);
    const declared = [
      { name: 'id', type: DOUBLE, nullable: false, description: '' },
      { name: 'at', type: TIMESTAMP, nullable: true, description: '' },
    ];
    expect(show(datasetColumns([unit], declared))).toEqual([
      ['id', 'DOUBLE'],
      ['at', 'TIMESTAMP'],
      ['extra', 'BIGINT'],
    ]);
    expect(datasetColumns([new Map([['x', NULL]])])).toBeUndefined();
  });

  it('names added and widened columns by path, nothing for a new dataset', () => {
    const before = new Map<string, LogicalType>([
      ['v', BIGINT],
      ['s', structOf([['a', BIGINT]])],
    ]);
    const after = new Map<string, LogicalType>([
      ['v', DOUBLE],
      [
        's',
        structOf([
          ['a', BIGINT],
          ['b', listOf(structOf([['c', VARCHAR]]))],
        ]),
      ],
      ['n', VARCHAR],
    ]);
    const name = (t: LogicalType): string => duckdbType(t);
    expect(schemaChanges(undefined, after, name)).toEqual([]);
    expect(schemaChanges(before, after, name)).toEqual([
      { column: 'v', change: 'widened', from: 'BIGINT', to: 'DOUBLE' },
      { column: 's.b', change: 'added', to: 'STRUCT("c" VARCHAR)[]' },
      { column: 'n', change: 'added', to: 'VARCHAR' },
    ]);
    expect(schemaChanges(after, after, name)).toEqual([]);
  });

  it('tells which widenings a union of Parquet files cannot read, and which turn values into text', () => {
    expect(unreadableAs(VARCHAR, JSON_TYPE)).toBe(true);
    expect(unreadableAs(listOf(structOf([['a', VARCHAR]])), listOf(structOf([['a', JSON_TYPE]])))).toBe(true);
    expect(unreadableAs(BIGINT, JSON_TYPE)).toBe(false);
    expect(unreadableAs(structOf([['a', BIGINT]]), JSON_TYPE)).toBe(false);
    expect(textifies(BIGINT, DOUBLE)).toBe(false);
    expect(textifies(DOUBLE, VARCHAR)).toBe(true);
    expect(
      textifies(
        structOf([['a', BIGINT]]),
        structOf([
          ['a', BIGINT],
          ['b', VARCHAR],
        ]),
      ),
    ).toBe(false);
    expect(textifies(structOf([['a', BIGINT]]), structOf([['a', JSON_TYPE]]))).toBe(true);
  });
});
