/**
 * Schema evolution as both SQL sinks run it: the plan (src/schema/column-changes.ts) turned into DDL one step at a
 * time, each refusal said with the column and the table, each change reported and logged alike. The statements
 * themselves are the dialect's (DuckDB rebuilds structs field by field; Postgres stores them as jsonb).
 */
import { ConflictLog, type SchemaConflict } from '../../schema/conflicts.js';
import {
  columnChangeRefused,
  planColumnChanges,
  type ColumnChange,
  type TypeName,
} from '../../schema/column-changes.js';
import type { LogicalType } from '../../core/logical-type.js';
import type { SchemaChange } from '../../core/types.js';

export type Columns = Map<string, LogicalType>;

export interface Evolution {
  /** The table's columns after the change. */
  columns: Columns;
  /** Each column (or struct field) added or widened, in the dialect's type names. */
  changes: SchemaChange[];
}

/** How a dialect changes a table's columns. */
export interface ColumnDdl {
  typeName: TypeName;
  /** `ALTER TABLE … ADD COLUMN` of the step (or a refusal, thrown). */
  add(table: string, step: Extract<ColumnChange, { kind: 'add' }>): string;
  /** `ALTER TABLE … ALTER COLUMN … TYPE … USING …` of the step. */
  widen(table: string, step: Extract<ColumnChange, { kind: 'widen' }>): string;
  /** What a widening changed, as the unit's `schemaChanges` report it. */
  widened(step: Extract<ColumnChange, { kind: 'widen' }>): SchemaChange[];
  run(sql: string): Promise<void>;
  /** An error's first line, as a refusal quotes it. */
  errorLine(err: unknown): string;
}

/**
 * Adds the columns of `incoming` the table `table` (qualified) lacks and widens the ones whose values no longer
 * fit, so rows of `incoming` can be written. `conflicts` collects fallbacks to text / JSON.
 */
export async function evolveColumns(
  table: string,
  current: Columns,
  incoming: ReadonlyMap<string, LogicalType>,
  conflicts: ConflictLog,
  ddl: ColumnDdl,
): Promise<Evolution> {
  const plan = planColumnChanges(current, incoming, ddl.typeName, conflicts);
  const changes: SchemaChange[] = [];
  for (const step of plan.changes) {
    const sql = step.kind === 'add' ? ddl.add(table, step) : ddl.widen(table, step);
    try {
      await ddl.run(sql);
    } catch (err) {
      throw columnChangeRefused(step, table, ddl.errorLine(err), err);
    }
    if (step.kind === 'add') changes.push({ column: step.column, change: 'added', to: ddl.typeName(step.type) });
    else changes.push(...ddl.widened(step));
  }
  return { columns: plan.columns, changes };
}

/** A change as the sink logs it. */
export function describeChange(c: SchemaChange): string {
  return c.change === 'added'
    ? `added column ${c.column} ${c.to}`
    : `changed column ${c.column} from ${c.from} to ${c.to}`;
}

/**
 * The schema conflicts of a table (fallbacks to text / JSON, names that differ only in case), logged whenever the
 * list grows. `shown` leaves out what the store does not count as a conflict (Postgres keeps case twins apart).
 */
export class ConflictReport {
  readonly all = new ConflictLog();
  private reported = 0;

  constructor(private readonly shown: (c: SchemaConflict) => boolean = () => true) {}

  /** Takes in a unit's conflicts (or none); the warning to log when the list grew, else undefined. */
  note(conflicts?: ConflictLog): string | undefined {
    if (conflicts && conflicts !== this.all) this.all.absorb(conflicts);
    const size = this.all.list().filter(this.shown).length;
    if (size <= this.reported) return undefined;
    this.reported = size;
    return this.all.format(this.shown);
  }
}
