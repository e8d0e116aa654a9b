/**
 * Lineage columns (`lineage: true`) on the three real sinks — a DuckDB file, Parquet and JSONL directories — written
 * by runPipeline from a local file (no transforms: the path where sinks would load the file natively), read back
 * with DuckDB and checked against the run history.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { pipelinePaths } from '../../src/state/paths.js';
import { readRunHistory, runHistoryFile } from '../../src/state/run-history.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { recordingLogger, tempDir } from '../support/in-memory.js';
import { quiet } from '../support/memory-pipeline.js';

async function rows(sql: string, attach?: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    if (attach) await conn.run(`ATTACH '${attach}' AS w (READ_ONLY)`);
    return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

describe('lineage: true', () => {
  it('gives every row of every sink the run that loaded it and when; without it, no such columns', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'in.jsonl'), '{"id":1}\n{"id":2}\n');
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1
name: lineage
service: { base_url: emulator, api_key: emulator-key }
source: { type: file, paths: [in.jsonl], format: jsonl, incremental: false }
sinks:
  - { type: duckdb, path: out/l.duckdb, table: items, lineage: true }
  - { type: duckdb, path: out/l.duckdb, table: plain }
  - { type: parquet, path: out/parquet, lineage: true }
  - { type: jsonl, path: out/jsonl, lineage: true }
`,
    );
    const p = await loadPipeline(file, {});
    await runPipeline(p, quiet, { log: recordingLogger() });
    // A second run (the first completed: a new run id) appends the same records again.
    await runPipeline(p, quiet, { log: recordingLogger() });
    const history = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    expect(history).toHaveLength(2);
    // In the order the queries below sort rows by: run ids of runs started in the same second sort by chance.
    const [first, second] = [...history].sort((a, b) => a.run.localeCompare(b.run));
    expect(first!.run).not.toBe(second!.run);

    const db = path.join(dir, 'out/l.duckdb');
    const select = (from: string): string =>
      `SELECT id::INT id, _sluice_run_id run, _sluice_loaded_at::VARCHAR loaded FROM ${from} ORDER BY run, id`;
    const sources = {
      duckdb: await rows(select('w.items'), db),
      parquet: await rows(select(`read_parquet('${dir}/out/parquet/**/*.parquet')`)),
      jsonl: await rows(select(`read_json('${dir}/out/jsonl/*.jsonl')`)),
    };
    for (const [sink, got] of Object.entries(sources)) {
      expect(
        got.map((r) => [r.id, r.run]),
        sink,
      ).toEqual([
        [1, first!.run],
        [2, first!.run],
        [1, second!.run],
        [2, second!.run],
      ]);
      got.forEach((r, k) => {
        const attempt = k < 2 ? first! : second!;
        const at = Date.parse(
          String(r.loaded)
            .replace(' ', 'T')
            .replace(/(\+00)?$/, 'Z')
            .replace('ZZ', 'Z'),
        );
        expect(at, `${sink} row ${k}: ${String(r.loaded)}`).toBeGreaterThanOrEqual(
          Date.parse(attempt.startedAt) - 1000,
        );
        expect(at, `${sink} row ${k}: ${String(r.loaded)}`).toBeLessThanOrEqual(Date.parse(attempt.endedAt!) + 1000);
      });
    }
    const plain = await rows(`SELECT column_name FROM duckdb_columns() WHERE table_name = 'plain'`, db);
    expect(plain.map((c) => c.column_name)).toEqual(['id']);

    // The DuckDB file's record of the loads: one row per run and table.
    const loads = await rows(
      `SELECT table_name, run_id, status, attempts, units::INT units, records::INT records FROM w._sluice_runs ORDER BY run_id, table_name`,
      db,
    );
    expect(loads).toEqual(
      [first!, second!].flatMap((r) =>
        ['items', 'plain'].map((t) => ({
          table_name: t,
          run_id: r.run,
          status: 'complete',
          attempts: 1,
          units: 1,
          records: 2,
        })),
      ),
    );
  });
});
