/**
 * `_sluice_runs`: one row per run that wrote to a table (or finished it), so a warehouse user can see the loads in
 * the database itself (like dlt's `_dlt_loads`). A resumed run updates its row: attempts, units and records add
 * up; the status is the last attempt's view from the sink: `complete` once the run finished every unit (and a
 * `replace` swapped its table in), `incomplete` while it has not. The run's full story (causes, paid jobs) is in
 * the run history beside the pipeline's state (`sluice runs`).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteString } from '../../src/schema/duckdb-types.js';

export const RUNS_TABLE = 'main._sluice_runs';

export async function ensureRunsTable(conn: DuckDBConnection): Promise<void> {
  await conn.run(
    `CREATE TABLE IF NOT EXISTS ${RUNS_TABLE} (
      pipeline VARCHAR NOT NULL,
      table_name VARCHAR NOT NULL,
      run_id VARCHAR NOT NULL,
      status VARCHAR NOT NULL,
      attempts INTEGER NOT NULL,
      units BIGINT NOT NULL,
      records BIGINT NOT NULL,
      started_at TIMESTAMP NOT NULL,
      ended_at TIMESTAMP NOT NULL,
      PRIMARY KEY (pipeline, table_name, run_id)
    )`,
  );
}

export interface SinkRunRow {
  pipeline: string;
  table: string;
  runId: string;
  complete: boolean;
  /** Units and records this attempt committed into the table. */
  units: number;
  records: number;
  /** When this attempt opened the sink. */
  startedAt: Date;
}

export async function recordRun(conn: DuckDBConnection, row: SinkRunRow): Promise<void> {
  const started = quoteString(row.startedAt.toISOString());
  await conn.run(
    `INSERT INTO ${RUNS_TABLE} VALUES (${quoteString(row.pipeline)}, ${quoteString(row.table)}, ${quoteString(row.runId)},
       ${quoteString(row.complete ? 'complete' : 'incomplete')}, 1, ${row.units}, ${row.records},
       ${started}::TIMESTAMPTZ::TIMESTAMP, now()::TIMESTAMP)
     ON CONFLICT (pipeline, table_name, run_id) DO UPDATE SET
       status = EXCLUDED.status,
       attempts = attempts + 1,
       units = units + EXCLUDED.units,
       records = records + EXCLUDED.records,
       ended_at = EXCLUDED.ended_at`,
  );
}
