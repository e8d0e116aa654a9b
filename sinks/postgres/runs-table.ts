/**
 * `_sluice_runs` in the target schema, as in the duckdb sink (sinks/duckdb/runs-table.ts): one row per run that wrote
 * to a table (or finished it), so the loads can be seen in the database itself, keyed by the same run id as the run
 * history, the logs, the metrics and the traces. A resumed run updates its row: attempts, units and records add up;
 * the status is the last attempt's: `complete` once the run finished every unit, `incomplete` while it has not.
 */
import type pg from 'pg';
import type { SinkContext } from '../../src/core/types.js';
import { errorLine } from './connection.js';
import { qualified } from './types.js';

export const RUNS_TABLE = '_sluice_runs';

type Queryable = pg.Pool | pg.PoolClient;

export function runsTable(schema: string): string {
  return qualified(schema, RUNS_TABLE);
}

export async function ensureRunsTable(c: Queryable, schema: string): Promise<void> {
  await c.query(
    `CREATE TABLE IF NOT EXISTS ${runsTable(schema)} (
      pipeline text NOT NULL,
      table_name text NOT NULL,
      run_id text NOT NULL,
      status text NOT NULL,
      attempts integer NOT NULL,
      units bigint NOT NULL,
      records bigint NOT NULL,
      started_at timestamptz NOT NULL,
      ended_at timestamptz NOT NULL,
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

export async function recordRun(c: Queryable, schema: string, row: SinkRunRow): Promise<void> {
  const t = runsTable(schema);
  await c.query(
    `INSERT INTO ${t} AS r VALUES ($1, $2, $3, $4, 1, $5, $6, $7, now())
     ON CONFLICT (pipeline, table_name, run_id) DO UPDATE SET
       status = EXCLUDED.status,
       attempts = r.attempts + 1,
       units = r.units + EXCLUDED.units,
       records = r.records + EXCLUDED.records,
       ended_at = EXCLUDED.ended_at`,
    [
      row.pipeline,
      row.table,
      row.runId,
      row.complete ? 'complete' : 'incomplete',
      row.units,
      row.records,
      row.startedAt,
    ],
  );
}

/** What one attempt did to the table, counted by the sink as it commits. */
export interface AttemptLoad {
  openedAt: Date;
  units: number;
  records: number;
  /** `finish()` ran: the run completed every unit. */
  finished: boolean;
}

/** This attempt's row, if it touched the table; a failure to write it only warns (the data is committed). */
export async function recordLoad(
  pool: pg.Pool,
  names: { schema: string; stateKey: string },
  ctx: SinkContext,
  load: AttemptLoad,
  label: string,
): Promise<void> {
  if (ctx.runId === undefined || (load.units === 0 && !load.finished)) return;
  try {
    await recordRun(pool, names.schema, {
      pipeline: ctx.pipeline,
      table: names.stateKey,
      runId: ctx.runId,
      complete: load.finished,
      units: load.units,
      records: load.records,
      startedAt: load.openedAt,
    });
  } catch (err) {
    ctx.log.warn(`${label}: could not record the run in _sluice_runs: ${errorLine(err)}`);
  }
}
