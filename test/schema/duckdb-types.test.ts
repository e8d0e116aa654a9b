import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { duckdbType, fromDuckDBType } from '../../src/schema/duckdb-types.js';
import { quoteIdent, quoteString } from '../../src/core/sql.js';
import {
  BIGINT,
  DATE,
  JSON_TYPE,
  NULL,
  TIMESTAMP,
  VARCHAR,
  describeType,
  listOf,
  sameType,
  structOf,
} from '../../src/core/logical-type.js';

describe('DuckDB type mapping', () => {
  it('quotes names and strings', () => {
    expect(quoteIdent('we"ird')).toBe('"we""ird"');
    expect(quoteString("it's")).toBe("'it''s'");
  });

  it('maps logical types to DuckDB text', () => {
    const t = structOf([
      ['a', listOf(structOf([['ts', TIMESTAMP]]))],
      ['b', NULL],
      ['c', structOf()],
    ]);
    expect(duckdbType(t)).toBe('STRUCT("a" STRUCT("ts" TIMESTAMP)[], "b" "NULL", "c" JSON)');
    expect(duckdbType(t, { forRead: true, openAs: 'VARCHAR' })).toBe(
      'STRUCT("a" STRUCT("ts" TIMESTAMPTZ)[], "b" VARCHAR, "c" JSON)',
    );
  });

  it('round-trips through a real DuckDB table', async () => {
    const t = structOf([
      ['s', structOf([['when', DATE]])],
      ['l', listOf(VARCHAR)],
      ['j', JSON_TYPE],
      ['i', BIGINT],
    ]);
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const cols = [...t.fields].map(([k, v]) => `${quoteIdent(k)} ${duckdbType(v)}`).join(', ');
      await conn.run(`CREATE TABLE x (${cols}, u UUID, small INTEGER)`);
      const r = await conn.runAndReadAll('SELECT * FROM x LIMIT 0');
      const back = r.columnTypes().map(fromDuckDBType);
      for (let i = 0; i < 4; i++) expect(sameType(back[i]!, [...t.fields][i]![1]), describeType(back[i]!)).toBe(true);
      expect(describeType(back[4]!)).toBe('UUID');
      expect(describeType(back[5]!)).toBe('BIGINT');
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  });
});
