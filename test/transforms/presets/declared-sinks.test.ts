/**
 * A preset's declared columns exist, with the declared types, in every sink from the first load: after a page whose
 * optional fields are all absent, and again after one where every field is present. Real runs through the engine
 * (`file` source → normalize → DuckDB, Parquet and JSONL sinks), read back through DuckDB: `DESCRIBE` of the table,
 * `DESCRIBE` of `read_parquet(…, union_by_name = true)`, and every JSONL line's keys.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../../src/operations/run.js';
import { silentLogger } from '../../../src/runtime/logger.js';
import { loadPipeline } from '../../../src/pipeline/load.js';
import type { DeclaredSchema } from '../../../src/core/declared.js';
import { duckdbType } from '../../../src/schema/duckdb-types.js';
import { PRESETS, presetDeclared, type PresetName } from '../../../src/transforms/normalize.js';
import { tempDir } from '../../support/in-memory.js';
import { PRESET_INPUTS } from './declared-pages.js';

const root = tempDir();
afterAll(() => rm(root, { recursive: true, force: true }));

/** DuckDB quotes some struct field names in DESCRIBE and not others: compare without quotes. */
const unquoted = (t: string): string => t.replace(/"/g, '');

async function describeTypes(sql: string, database?: string): Promise<Map<string, string>> {
  // The DuckDB sink shares one instance per database file in this process: read through the same one.
  const instance = database ? await DuckDBInstance.fromCache(database) : await DuckDBInstance.create();
  const conn = await instance.connect();
  try {
    const rows = (await conn.runAndReadAll(`DESCRIBE ${sql}`)).getRowObjectsJS();
    return new Map(rows.map((r) => [String(r.column_name), unquoted(String(r.column_type))]));
  } finally {
    conn.closeSync();
    if (!database) instance.closeSync();
  }
}

function expectDeclared(where: string, found: Map<string, string>, declared: DeclaredSchema, jsonAsText = false): void {
  const expected = declared.map((c) => [c.name, unquoted(duckdbType(c.type))]);
  const actual = declared.map((c) => {
    const t = found.get(c.name);
    return [c.name, jsonAsText && t === 'VARCHAR' && c.type.kind === 'json' ? 'JSON' : (t ?? '(missing)')];
  });
  expect(actual, `${where}: declared columns and types`).toEqual(expected);
}

function jsonlLines(dir: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.jsonl'))
        for (const line of readFileSync(p, 'utf8').split('\n')) if (line !== '') out.push(JSON.parse(line));
    }
  };
  walk(dir);
  return out;
}

async function load(file: string): Promise<void> {
  const summary = await runPipeline(
    await loadPipeline(file),
    { fresh: false, logFormat: 'text', quiet: true, progress: false },
    { log: silentLogger },
  );
  expect(summary.deadLetters).toBe(0);
  expect(summary.units.failed).toBe(0);
}

const presets = Object.keys(PRESETS) as PresetName[];

// Each preset writes outputs of its own, so they run side by side.
describe.concurrent('declared columns in every sink', () => {
  it.each(presets)('%s: after a page with every optional field absent, then one with every field', async (preset) => {
    const dir = path.join(root, preset);
    mkdirSync(path.join(dir, 'in'), { recursive: true });
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        `name: declared_${preset}`,
        'service: { base_url: emulator, api_key: emulator-key }',
        'source: { type: file, paths: [in], format: jsonl }',
        `transforms: [ { type: normalize, preset: ${preset} } ]`,
        'sinks:',
        '  - { type: duckdb, path: out/w.duckdb, table: t }',
        '  - { type: parquet, path: out/pq }',
        '  - { type: jsonl, path: out/jl }',
        '',
      ].join('\n'),
    );
    const declared = presetDeclared(preset);
    const names = declared.map((c) => c.name).sort();
    const inputs = PRESET_INPUTS[preset];
    for (const [i, input] of (['bare', 'full'] as const).entries()) {
      // The file source gives no unit parameters: the row carries what the crawl would (reviews' `fid`).
      writeFileSync(path.join(dir, 'in', `${i}-${input}.jsonl`), JSON.stringify(inputs[input]) + '\n');
      await load(file);
      const where = `${preset} after the ${input} page`;
      expectDeclared(`${where}, DuckDB`, await describeTypes('t', path.join(dir, 'out/w.duckdb')), declared);
      const pq = `SELECT * FROM read_parquet('${path.join(dir, 'out/pq')}/**/*.parquet', union_by_name = true)`;
      expectDeclared(`${where}, Parquet`, await describeTypes(pq), declared, true);
      const lines = jsonlLines(path.join(dir, 'out/jl'));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(Object.keys(line).sort(), `${where}, JSONL keys`).toEqual(names);
        // Absent values are written as JSON null, never left out.
        for (const c of declared) expect(line[c.name], `${where}, JSONL ${c.name}`).not.toBeUndefined();
      }
    }
  });
});
