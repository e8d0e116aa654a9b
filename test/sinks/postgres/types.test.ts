/** The postgres sink's pure parts: the type mapping both ways, COPY text encoding, and which failures are transient. */
import { describe, expect, it } from 'vitest';
import { DateOnly } from '../../../src/core/values.js';
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
  type LogicalType,
} from '../../../src/core/logical-type.js';
import { tableNames } from '../../../sinks/postgres/config.js';
import { isTransientPgError } from '../../../sinks/postgres/connection.js';
import { RowEncoder, UnstorableValue } from '../../../sinks/postgres/encode.js';
import { fromPgColumn, pgType } from '../../../sinks/postgres/types.js';

describe('postgres types', () => {
  it('maps logical types to Postgres column types: arrays for lists of scalars, jsonb for anything nested', () => {
    expect(
      [BIGINT, DOUBLE, VARCHAR, BOOLEAN, TIMESTAMP, DATE, JSON_TYPE, NULL, nativeType('uuid')].map(pgType),
    ).toEqual(['bigint', 'double precision', 'text', 'boolean', 'timestamptz', 'date', 'jsonb', 'text', 'uuid']);
    expect(pgType(listOf(BIGINT))).toBe('bigint[]');
    expect(pgType(listOf(TIMESTAMP))).toBe('timestamptz[]');
    expect(pgType(structOf([['a', BIGINT]]))).toBe('jsonb');
    expect(pgType(listOf(structOf([['a', BIGINT]])))).toBe('jsonb');
    expect(pgType(listOf(listOf(BIGINT)))).toBe('jsonb');
    expect(pgType(listOf(JSON_TYPE))).toBe('jsonb');
  });

  it('reads existing columns back as logical types; types sluice never writes stay native', () => {
    expect(fromPgColumn('bigint', 'int8')).toBe(BIGINT);
    expect(fromPgColumn('integer', 'int4')).toBe(BIGINT);
    expect(fromPgColumn('double precision', 'float8')).toBe(DOUBLE);
    expect(fromPgColumn('text', 'text')).toBe(VARCHAR);
    expect(fromPgColumn('timestamp with time zone', 'timestamptz')).toBe(TIMESTAMP);
    expect(fromPgColumn('date', 'date')).toBe(DATE);
    expect(fromPgColumn('jsonb', 'jsonb')).toBe(JSON_TYPE);
    expect(fromPgColumn('ARRAY', '_text')).toEqual(listOf(VARCHAR));
    expect(fromPgColumn('ARRAY', '_jsonb')).toEqual(nativeType('jsonb[]'));
    expect(fromPgColumn('numeric', 'numeric')).toEqual(nativeType('numeric'));
    expect(fromPgColumn('timestamp without time zone', 'timestamp')).toEqual(nativeType('timestamp without time zone'));
    expect(fromPgColumn('USER-DEFINED', 'citext')).toEqual(nativeType('citext'));
  });

  it('names the next generation and the state keys after the table', () => {
    expect(tableNames({ schema: 'raw', table: 't', write: 'replace' })).toEqual({
      schema: 'raw',
      table: 't',
      target: 't__sluice_next',
      stateKey: 'raw.t',
      targetStateKey: 'raw.t__sluice_next',
    });
    expect(tableNames({ schema: 'public', table: 't', write: 'merge' }).target).toBe('t');
  });
});

describe('COPY text encoding', () => {
  const types = new Map<string, LogicalType>([
    ['n', BIGINT],
    ['s', VARCHAR],
    ['at', TIMESTAMP],
    ['day', DATE],
    ['tags', listOf(VARCHAR)],
    ['doc', JSON_TYPE],
  ]);
  const enc = new RowEncoder([...types.keys()], types);

  it('writes one tab-separated line per row, \\N for null and absent values', () => {
    expect(enc.line({ n: 1, s: 'x' })).toBe('1\tx\t\\N\t\\N\t\\N\t\\N\n');
    expect(
      enc.line({
        n: 2n,
        s: 5,
        at: new Date('2024-01-02T03:04:05.678Z'),
        day: new DateOnly('2024-02-29'),
        tags: ['a"b', null, 'c\\d'],
        doc: { k: [1, 'two'], big: 3n },
      }),
    ).toBe('2\t5\t2024-01-02T03:04:05.678Z\t2024-02-29\t{"a\\\\"b",NULL,"c\\\\\\\\d"}\t{"k":[1,"two"],"big":3}\n');
  });

  it('escapes backslash, tab, newline and carriage return; refuses NUL', () => {
    expect(enc.line({ s: 'a\tb\nc\rd\\e' })).toBe('\\N\ta\\tb\\nc\\rd\\\\e\t\\N\t\\N\t\\N\t\\N\n');
    expect(() => enc.line({ s: 'a\0b' })).toThrow(UnstorableValue);
    expect(() => enc.line({ doc: { s: 'a\0b' } })).toThrow(UnstorableValue);
  });
});

describe('transient failures', () => {
  it('are the ones of the server or the link, not of the statement', () => {
    const pgError = (code: string): Error => Object.assign(new Error('x'), { code });
    for (const code of ['57P01', '08006', '08001', '53300', '40P01', 'ECONNRESET', 'ECONNREFUSED'])
      expect(isTransientPgError(pgError(code)), code).toBe(true);
    expect(isTransientPgError(new Error('Connection terminated unexpectedly'))).toBe(true);
    for (const code of ['22P02', '42P01', '23505', '28P01'])
      expect(isTransientPgError(pgError(code)), code).toBe(false);
  });
});
