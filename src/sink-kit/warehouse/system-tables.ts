/**
 * The tables sluice keeps beside the data, `_sluice_state` (one row per committed unit) and `_sluice_runs` (one row
 * per run that wrote to a table), declared once: each SQL sink creates them with its own type names, and records
 * a run with the same upsert.
 */
import type { SinkContext } from '../../core/types.js';

/** The column types a dialect names for the system tables. */
export interface SystemTypes {
  text: string;
  integer: string;
  bigint: string;
  timestamp: string;
  json: string;
}

/** A dialect's statements for the system tables. */
export interface SystemTableSql {
  createState: string;
  createRuns: string;
  /** The upsert of an attempt's row in `_sluice_runs`, with parameters $1 … $7 (`AttemptLoad.runRow`). */
  upsertRun: string;
}

/**
 * The statements over `tables` in a dialect's `types`. `startedAt` is how the dialect reads $7 (an ISO string) as
 * its timestamp, `now` its current time in that type; `stateKey` gives `_sluice_state` a primary key (and its
 * `committed_at` the default `now`), where the dialect enforces one unit commit with it.
 */
export function systemTableSql(
  types: SystemTypes,
  tables: { state: string; runs: string },
  dialect: { startedAt: string; now: string; stateKey: boolean },
): SystemTableSql {
  return {
    createState: createSystemTable(
      tables.state,
      STATE_COLUMNS,
      types,
      dialect.stateKey
        ? { primaryKey: ['pipeline', 'table_name', 'unit_id'], defaults: { committed_at: dialect.now } }
        : {},
    ),
    createRuns: createSystemTable(tables.runs, RUNS_COLUMNS, types, { primaryKey: RUNS_KEY }),
    upsertRun: upsertRunSql(tables.runs, dialect),
  };
}

type Column = readonly [name: string, type: keyof SystemTypes, extra?: string];

/**
 * `_sluice_state`: written in the same transaction as the unit's rows, so a unit's data and its checkpoint exist
 * together or not at all; `checkpoint` is the unit's cursor checkpoint (JSON), null when it has none.
 */
const STATE_COLUMNS: readonly Column[] = [
  ['pipeline', 'text', 'NOT NULL'],
  ['table_name', 'text', 'NOT NULL'],
  ['unit_id', 'text', 'NOT NULL'],
  ['records', 'bigint', 'NOT NULL'],
  ['committed_at', 'timestamp', 'NOT NULL'],
  ['checkpoint', 'json'],
];

/**
 * `_sluice_runs`, so a warehouse user sees the loads in the database itself (like dlt's `_dlt_loads`), keyed by the
 * run id of the run history, the logs and the metrics. A resumed run updates its row: attempts, units and records
 * add up; the status is the last attempt's: `complete` once the run finished every unit (and a `replace` swapped
 * its table in), `incomplete` while it has not.
 */
const RUNS_COLUMNS: readonly Column[] = [
  ['pipeline', 'text', 'NOT NULL'],
  ['table_name', 'text', 'NOT NULL'],
  ['run_id', 'text', 'NOT NULL'],
  ['status', 'text', 'NOT NULL'],
  ['attempts', 'integer', 'NOT NULL'],
  ['units', 'bigint', 'NOT NULL'],
  ['records', 'bigint', 'NOT NULL'],
  ['started_at', 'timestamp', 'NOT NULL'],
  ['ended_at', 'timestamp', 'NOT NULL'],
];

const RUNS_KEY = ['pipeline', 'table_name', 'run_id'] as const;

/** `CREATE TABLE IF NOT EXISTS` of a system table; `defaults` adds a column's DEFAULT (column → SQL). */
function createSystemTable(
  table: string,
  columns: readonly Column[],
  types: SystemTypes,
  options: { primaryKey?: readonly string[]; defaults?: Readonly<Record<string, string>> } = {},
): string {
  const defs = columns.map(([name, type, extra]) =>
    [name, types[type], extra, options.defaults?.[name] && `DEFAULT ${options.defaults[name]}`]
      .filter(Boolean)
      .join(' '),
  );
  if (options.primaryKey) defs.push(`PRIMARY KEY (${options.primaryKey.join(', ')})`);
  return `CREATE TABLE IF NOT EXISTS ${table} (\n  ${defs.join(',\n  ')}\n)`;
}

/**
 * The upsert of an attempt's row in `_sluice_runs`, with parameters $1 … $7 (`runRowValues`): `startedAt` is how the
 * dialect reads $7 as its timestamp, `now` its current time in that type.
 */
function upsertRunSql(table: string, dialect: { startedAt: string; now: string }): string {
  return `INSERT INTO ${table} AS r VALUES ($1, $2, $3, $4, 1, $5, $6, ${dialect.startedAt}, ${dialect.now})
     ON CONFLICT (${RUNS_KEY.join(', ')}) DO UPDATE SET
       status = EXCLUDED.status,
       attempts = r.attempts + 1,
       units = r.units + EXCLUDED.units,
       records = r.records + EXCLUDED.records,
       ended_at = EXCLUDED.ended_at`;
}

/** What one attempt did to the table, counted by the sink as it commits. */
export class AttemptLoad {
  openedAt = new Date();
  units = 0;
  records = 0;
  /** `finish()` ran: the run completed every unit. */
  finished = false;

  opened(): void {
    this.openedAt = new Date();
  }

  committed(r: { committed: boolean; records: number }): void {
    if (!r.committed) return;
    this.units++;
    this.records += r.records;
  }

  /**
   * The values of this attempt's row (`upsertRunSql`'s $1 … $7, the start as an ISO string), or undefined when the
   * attempt did not touch the table or the run has no id.
   */
  runRow(ctx: SinkContext, table: string): (string | number)[] | undefined {
    if (ctx.runId === undefined || (this.units === 0 && !this.finished)) return undefined;
    const status = this.finished ? 'complete' : 'incomplete';
    return [ctx.pipeline, table, ctx.runId, status, this.units, this.records, this.openedAt.toISOString()];
  }
}

/** Writes this attempt's row with `write`; a failure to write it only warns (the data is committed). */
export async function recordAttempt(
  ctx: SinkContext,
  load: AttemptLoad,
  table: string,
  label: string,
  write: (values: (string | number)[]) => Promise<void>,
  errorText: (err: unknown) => string = firstLine,
): Promise<void> {
  const values = load.runRow(ctx, table);
  if (!values) return;
  try {
    await write(values);
  } catch (err) {
    ctx.log.warn(`${label}: could not record the run in _sluice_runs: ${errorText(err)}`);
  }
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}
