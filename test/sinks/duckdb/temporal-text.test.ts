import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { duckdbType } from '../../../src/schema/duckdb-types.js';
import { DATE, TIMESTAMP, VARCHAR, listOf, structOf } from '../../../src/core/logical-type.js';
import { stageRawJsonl } from '../../../sinks/duckdb/stage.js';
import { fitTextToTemporal, textConverts } from '../../../sinks/duckdb/temporal-text.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

describe('textConverts', () => {
  it('asks only about text that meets a DATE or TIMESTAMP of the table, at any depth', () => {
    expect(textConverts('"a"', VARCHAR, VARCHAR, 0)).toBeUndefined();
    expect(textConverts('"a"', TIMESTAMP, TIMESTAMP, 0)).toBeUndefined();
    expect(textConverts('"a"', VARCHAR, TIMESTAMP, 0)).toBeUndefined();
    expect(textConverts('"a"', TIMESTAMP, VARCHAR, 0)).toBe(
      '("a" IS NULL OR TRY_CAST("a" AS TIMESTAMPTZ) IS NOT NULL)',
    );
    expect(textConverts('"a"', DATE, VARCHAR, 0)).toContain('TRY_CAST("a" AS DATE)');
    const nested = textConverts(
      '"s"',
      structOf([['l', listOf(structOf([['d', DATE]]))]]),
      structOf([['l', listOf(structOf([['d', VARCHAR]]))]]),
      0,
    );
    expect(nested).toContain('list_transform(struct_extract("s", \'l\'), lambda x1:');
    expect(nested).toContain("TRY_CAST(struct_extract(x1, 'd') AS DATE)");
  });
});

describe('fitTextToTemporal', () => {
  it("types a column's text as the table's DATE/TIMESTAMP when DuckDB converts all of it, per column", async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'u.jsonl');
    const rows = [
      { ok: '2024-01-02T03:04:05 UTC', bad: '2024-01-02', day: '2024-01-02T00:00' },
      { ok: null, bad: 'soon', day: null },
    ];
    await writeFile(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const unit = await stageRawJsonl(file, path.join(dir, 'stage.json'));
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const table = new Map([
        ['ok', TIMESTAMP],
        ['bad', DATE],
        ['day', DATE],
      ]);
      const fitted = await fitTextToTemporal(conn, unit, table);
      expect(Object.fromEntries([...fitted].map(([k, t]) => [k, duckdbType(t)]))).toEqual({
        ok: 'TIMESTAMP',
        bad: 'VARCHAR',
        // ISO text the scan already typed is not text: it widens the DATE column as a TIMESTAMP would.
        day: 'TIMESTAMP',
      });
      // Without a table (or without text meeting a temporal column) the unit's columns come back as they are.
      expect(await fitTextToTemporal(conn, unit, undefined)).toBe(unit.columns);
      expect(await fitTextToTemporal(conn, unit, new Map([['ok', VARCHAR]]))).toBe(unit.columns);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  });
});
