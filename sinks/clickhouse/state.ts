/**
 * The system tables in the target database: `_sluice_state` (a unit's row, with its checkpoint) and `_sluice_runs`
 * (a run's row), with the columns the other warehouse sinks give them (src/sink-kit/warehouse/system-tables.ts) and three
 * more, because ClickHouse has no transactions, no unique keys and no UPDATE but by mutation:
 *
 * - `status`: where the unit's commit stands — `publishing` (its rows are staged; the load `load_id` is about to be
 *   attached), `committed`, `deleted` (what `sluice state drop` or a new generation removed); and two markers that are
 *   not units: `dropping` (a drop under way) and `swapping` (a `replace` run's swap under way);
 * - `load_id`: the load whose rows the unit's commit attached (`_sluice_load` of those rows);
 * - `version`: rows are never changed, a newer row of the same (pipeline, table_name, unit_id) supersedes the older
 *   (a ReplacingMergeTree, read as the newest row per key with `LIMIT 1 BY`, never with FINAL and a filter on a column
 *   outside the key, which 18.16 may apply before it picks the newest).
 *
 * Every write is one INSERT: ClickHouse stores an INSERT of one block into an unpartitioned table as one part,
 * which appears whole or not at all — the commit point of each step of the protocol (unit.ts, replace.ts).
 */
import { literal, qualified } from './types.js';
import type { Server } from './connection.js';

export const STATE_TABLE = '_sluice_state';
export const RUNS_TABLE = '_sluice_runs';

export type UnitStatus = 'publishing' | 'committed' | 'deleted' | 'dropping' | 'swapping';

export interface StateRow {
  pipeline: string;
  table_name: string;
  unit_id: string;
  status: UnitStatus;
  load_id: string;
  records: number;
  /** JSON text of the unit's checkpoint; '' when it has none. */
  checkpoint: string;
  committed_at: string;
  /** The row's version as text (a UInt64 beyond a JS number's exact range); '' in a row not yet written. */
  version: string;
}

let lastVersion = 0n;

/**
 * A version newer than every one this process wrote: microseconds since the epoch, kept increasing. Processes on
 * other machines write other units (shards), and a unit's rows are only ever superseded by its own later steps.
 */
export function nextVersion(): bigint {
  const now = BigInt(Date.now()) * 1000n;
  lastVersion = now > lastVersion ? now : lastVersion + 1n;
  return lastVersion;
}

export async function ensureSystemTables(server: Server, database: string): Promise<void> {
  await server.exec(`CREATE TABLE IF NOT EXISTS ${qualified(database, STATE_TABLE)} (
  pipeline String,
  table_name String,
  unit_id String,
  status String,
  load_id String,
  records Int64,
  committed_at DateTime('UTC'),
  checkpoint String,
  version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY (pipeline, table_name, unit_id)`);
  await server.exec(`CREATE TABLE IF NOT EXISTS ${qualified(database, RUNS_TABLE)} (
  pipeline String,
  table_name String,
  run_id String,
  status String,
  attempts Int32,
  units Int64,
  records Int64,
  started_at DateTime('UTC'),
  ended_at DateTime('UTC'),
  version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY (pipeline, table_name, run_id)`);
}

/** The newest row of every unit (and marker) of `tables`, oldest commit first. */
export async function latestRows(
  server: Server,
  database: string,
  pipeline: string,
  tables: readonly string[],
): Promise<StateRow[]> {
  return server.rows<StateRow>(
    `SELECT pipeline, table_name, unit_id, status, load_id, records, checkpoint, toString(committed_at) AS committed_at,
            toString(version) AS version
       FROM ${qualified(database, STATE_TABLE)}
      WHERE pipeline = ${literal(pipeline)} AND table_name IN (${tables.map(literal).join(', ')})
      ORDER BY version DESC LIMIT 1 BY table_name, unit_id`,
  );
}

/** The newest row of one unit of `table`, or undefined. */
export async function unitRow(
  server: Server,
  database: string,
  pipeline: string,
  table: string,
  unitId: string,
): Promise<StateRow | undefined> {
  const rows = await server.rows<StateRow>(
    `SELECT pipeline, table_name, unit_id, status, load_id, records, checkpoint, toString(committed_at) AS committed_at,
            toString(version) AS version
       FROM ${qualified(database, STATE_TABLE)}
      WHERE pipeline = ${literal(pipeline)} AND table_name = ${literal(table)} AND unit_id = ${literal(unitId)}
      ORDER BY version DESC LIMIT 1`,
  );
  return rows[0];
}

export async function committedUnitIds(
  server: Server,
  database: string,
  pipeline: string,
  table: string,
): Promise<Set<string>> {
  const rows = await latestRows(server, database, pipeline, [table]);
  return new Set(rows.filter((r) => r.status === 'committed').map((r) => r.unit_id));
}

export async function committedCheckpoints(
  server: Server,
  database: string,
  pipeline: string,
  table: string,
): Promise<Map<string, unknown>> {
  const rows = (await latestRows(server, database, pipeline, [table])).filter(
    (r) => r.status === 'committed' && r.checkpoint !== '',
  );
  // In commit order (the cursor's), which the version keeps to the microsecond.
  rows.sort((a, b) => (BigInt(a.version) < BigInt(b.version) ? -1 : 1));
  return new Map(rows.map((r) => [r.unit_id, JSON.parse(r.checkpoint) as unknown]));
}

/** A row as the state table takes it: the newest version of its unit from now on. */
export function stateRow(
  pipeline: string,
  table: string,
  unitId: string,
  status: UnitStatus,
  fields: { loadId?: string; records?: number; checkpoint?: string } = {},
): StateRow {
  return {
    pipeline,
    table_name: table,
    unit_id: unitId,
    status,
    load_id: fields.loadId ?? '',
    records: fields.records ?? 0,
    checkpoint: fields.checkpoint ?? '',
    committed_at: '',
    version: '',
  };
}

/** A DateTime literal's text (`YYYY-MM-DD hh:mm:ss`, UTC): plain values parse fast, expressions do not. */
function dateTimeText(d: Date): string {
  return d.toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * Writes `rows` in ONE insert (one part: all of them or none), each a newer version than any before. For a row or
 * two (a unit's, a marker): a few hundred bytes leave in one write, which a kill -9 cannot split.
 */
export async function writeState(server: Server, database: string, rows: readonly StateRow[]): Promise<void> {
  if (rows.length === 0) return;
  const now = literal(dateTimeText(new Date()));
  const values = rows.map(
    (r) =>
      `(${[r.pipeline, r.table_name, r.unit_id, r.status, r.load_id].map(literal).join(', ')}, ${r.records}, ${now}, ${literal(r.checkpoint)}, ${nextVersion()})`,
  );
  await server.exec(
    `INSERT INTO ${qualified(database, STATE_TABLE)} (pipeline, table_name, unit_id, status, load_id, records, committed_at, checkpoint, version) VALUES ${values.join(', ')}`,
  );
}

const COLUMNS = 'pipeline, table_name, unit_id, status, load_id, records, committed_at, checkpoint, version';

/** The newest row of each unit of `tables`, as a subquery. */
function latestSql(database: string, pipeline: string, tables: readonly string[]): string {
  return `SELECT ${COLUMNS} FROM ${qualified(database, STATE_TABLE)}
     WHERE pipeline = ${literal(pipeline)} AND table_name IN (${tables.map(literal).join(', ')})
     ORDER BY version DESC LIMIT 1 BY table_name, unit_id`;
}

/**
 * Supersedes every unit and marker of `tables` with `deleted`, in ONE insert computed by the server from the state
 * table itself: no row list travels in a request body, which a connection cut mid-way would leave half-sent — and
 * 18.16 stores the half it read (test/sinks/clickhouse/connection.test.ts).
 */
export async function supersedeAll(
  server: Server,
  database: string,
  pipeline: string,
  tables: readonly string[],
): Promise<void> {
  await server.exec(
    `INSERT INTO ${qualified(database, STATE_TABLE)} (${COLUMNS})
     SELECT pipeline, table_name, unit_id, 'deleted', '', 0, ${literal(dateTimeText(new Date()))}, '', ${nextVersion()}
       FROM (${latestSql(database, pipeline, tables)}) WHERE status != 'deleted'`,
  );
}

/**
 * `replace`'s swap, in ONE insert computed by the server (see `supersedeAll`): the table's units superseded, the
 * next generation's committed ones copied under the table, and every row of the next generation superseded.
 */
export async function moveGeneration(
  server: Server,
  database: string,
  pipeline: string,
  table: string,
  next: string,
): Promise<void> {
  const [t, n] = [literal(table), literal(next)];
  await server.exec(
    `INSERT INTO ${qualified(database, STATE_TABLE)} (${COLUMNS})
     SELECT pipeline, o.1, unit_id, o.2, if(o.2 = 'deleted', '', load_id), if(o.2 = 'deleted', 0, records),
            committed_at, if(o.2 = 'deleted', '', checkpoint), ${nextVersion()}
       FROM (${latestSql(database, pipeline, [table, next])})
      ARRAY JOIN multiIf(table_name = ${t}, [(${t}, 'deleted')],
                         status = 'committed', [(${n}, 'deleted'), (${t}, 'committed')],
                         [(${n}, 'deleted')]) AS o
      WHERE status != 'deleted'`,
  );
}

/**
 * An attempt's row in `_sluice_runs`, added up with the run's earlier attempts (`AttemptLoad.runRow`'s values: pipeline,
 * table, run id, status, units, records, started at): the run's newest row is read, and the sum written as a newer one.
 */
export async function recordRun(server: Server, database: string, values: (string | number)[]): Promise<void> {
  const [pipeline, table, runId, status, units, records, startedAt] = values as [
    string,
    string,
    string,
    string,
    number,
    number,
    string,
  ];
  const runs = qualified(database, RUNS_TABLE);
  const before = await server.rows<{ attempts: number; units: number; records: number; started_at: string }>(
    `SELECT attempts, units, records, toString(started_at) AS started_at FROM ${runs}
      WHERE pipeline = ${literal(pipeline)} AND table_name = ${literal(table)} AND run_id = ${literal(runId)}
      ORDER BY version DESC LIMIT 1`,
  );
  const prev = before[0];
  const started = literal(prev ? prev.started_at : dateTimeText(new Date(startedAt)));
  await server.exec(
    `INSERT INTO ${runs} (pipeline, table_name, run_id, status, attempts, units, records, started_at, ended_at, version)
     VALUES (${[pipeline, table, runId, status].map(literal).join(', ')}, ${(prev?.attempts ?? 0) + 1}, ${(prev?.units ?? 0) + units}, ${(prev?.records ?? 0) + records}, ${started}, ${literal(dateTimeText(new Date()))}, ${nextVersion()})`,
  );
}
