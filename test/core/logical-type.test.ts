import { describe, expect, it } from 'vitest';
import {
  BIGINT,
  NULL,
  TIMESTAMP,
  cloneType,
  decidedColumns,
  describeType,
  deserializeType,
  listOf,
  nativeType,
  sameType,
  serializeType,
  structOf,
  type LogicalType,
} from '../../src/core/logical-type.js';

describe('logical types', () => {
  const t = structOf([
    ['a', listOf(structOf([['b', TIMESTAMP]]))],
    ['n', NULL],
    ['u', nativeType('UUID')],
  ]);

  it('serialise to JSON and back', () => {
    const back = deserializeType(JSON.parse(JSON.stringify(serializeType(t))));
    expect(sameType(back, t)).toBe(true);
    expect(describeType(back)).toBe('STRUCT<{a: LIST<STRUCT<{b: TIMESTAMP}>>, n: null, u: UUID}>');
  });

  it('leaves out open parts for tables (null-only columns, fields, lists of nothing)', () => {
    const cols = decidedColumns(
      new Map<string, LogicalType>([
        ['t', t],
        ['n', NULL],
        ['empty', listOf(NULL)],
        ['allOpen', structOf([['x', NULL]])],
      ]),
    );
    expect([...cols.keys()]).toEqual(['t']);
    expect(describeType(cols.get('t')!)).toBe('STRUCT<{a: LIST<STRUCT<{b: TIMESTAMP}>>, u: UUID}>');
  });

  it('rejects an unknown saved kind', () => {
    expect(() => deserializeType({ kind: 'weird' } as never)).toThrow(/unknown column type/);
  });

  it('clones deeply and compares structurally', () => {
    const c = cloneType(t);
    expect(sameType(c, t)).toBe(true);
    if (c.kind === 'struct') c.fields.set('x', BIGINT);
    expect(sameType(c, t)).toBe(false);
  });
});
