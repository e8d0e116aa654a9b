import { describe, expect, it } from 'vitest';
import { ConflictLog } from '../../src/schema/conflicts.js';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import { joinTypes } from '../../src/schema/join.js';
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  NULL,
  TIMESTAMP,
  VARCHAR,
  listOf,
  nativeType,
  structOf,
} from '../../src/core/logical-type.js';

const j = (a: Parameters<typeof joinTypes>[0], b: Parameters<typeof joinTypes>[1], log?: ConflictLog): string =>
  duckdbType(joinTypes(a, b, ['c'], log));

describe('joinTypes', () => {
  it('widens along int → double → text and date → timestamp → text', () => {
    expect(j(BIGINT, DOUBLE)).toBe('DOUBLE');
    expect(j(DOUBLE, BIGINT)).toBe('DOUBLE');
    expect(j(DOUBLE, VARCHAR)).toBe('VARCHAR');
    expect(j(DATE, TIMESTAMP)).toBe('TIMESTAMP');
    expect(j(TIMESTAMP, VARCHAR)).toBe('VARCHAR');
    expect(j(BOOLEAN, BIGINT)).toBe('VARCHAR');
    expect(j(NULL, BOOLEAN)).toBe('BOOLEAN');
    expect(j(JSON_TYPE, listOf(BIGINT))).toBe('JSON');
  });

  it('records fallbacks, but not plain widenings', () => {
    const log = new ConflictLog();
    j(BIGINT, DOUBLE, log);
    j(DATE, TIMESTAMP, log);
    expect(log.size).toBe(0);
    j(BIGINT, VARCHAR, log);
    expect(log.list()).toEqual([expect.objectContaining({ path: 'c', kind: 'text', seen: ['BIGINT', 'VARCHAR'] })]);
    j(VARCHAR, structOf([['a', BIGINT]]), log);
    expect(log.list()).toEqual([
      expect.objectContaining({ path: 'c', kind: 'json', seen: ['BIGINT', 'VARCHAR', 'STRUCT'] }),
    ]);
  });

  it('joins list elements and struct fields recursively, returning the left side when nothing changes', () => {
    const a = structOf([['x', listOf(BIGINT)]]);
    const b = structOf([
      ['x', listOf(DOUBLE)],
      ['y', DATE],
    ]);
    expect(j(a, b)).toBe('STRUCT("x" DOUBLE[], "y" DATE)');
    expect(joinTypes(b, structOf([['y', NULL]]), [])).toBe(b);
    expect(duckdbType(a)).toBe('STRUCT("x" BIGINT[])');
  });

  it('keeps a native table type and lets the database cast', () => {
    expect(j(nativeType('UUID'), VARCHAR)).toBe('UUID');
    expect(j(NULL, nativeType('DECIMAL(18,3)'))).toBe('DECIMAL(18,3)');
  });
});
