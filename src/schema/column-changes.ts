/**
 * Schema evolution as a plan: which columns a table must gain or widen so rows of the incoming columns fit. Decided
 * over logical types once, for every table sink; each sink turns the plan into its own DDL. Whether a column needs
 * widening depends on the sink's type mapping (`typeName`): two logical types that map to one database type
 * (a STRUCT gaining a field is still `jsonb` in Postgres) need no DDL, only the table's remembered type changes.
 */
import { SluiceError } from '../core/errors.js';
import type { ConflictLog } from './conflicts.js';
import { caseTwin, joinTypes } from './join.js';
import { cloneType, describeType, sameType, type LogicalType } from '../core/logical-type.js';

export type ColumnChange =
  | {
      kind: 'add';
      column: string;
      type: LogicalType;
      /**
       * A column of the table (or one added earlier in the plan) whose name equals this one but for case: a sink
       * whose names ignore case (DuckDB) cannot add this column.
       */
      caseTwin?: string;
    }
  | { kind: 'widen'; column: string; from: LogicalType; to: LogicalType };

export interface ColumnPlan {
  /** The table's columns once every change is made, with open parts the incoming data decided (a STRUCT field
   * that was still null) even where no DDL is needed. */
  columns: Map<string, LogicalType>;
  /** In the order of `incoming`'s columns. */
  changes: ColumnChange[];
}

/** The sink's name for a logical type as its table stores it (`duckdbType`, `pgType`). */
export type TypeName = (t: LogicalType) => string;

/**
 * The changes that make `current` (the table's columns) hold rows of `incoming`: columns it lacks are added, columns
 * whose joined type is another database type are widened. `conflicts` collects fallbacks to text / JSON.
 */
export function planColumnChanges(
  current: ReadonlyMap<string, LogicalType>,
  incoming: ReadonlyMap<string, LogicalType>,
  typeName: TypeName,
  conflicts?: ConflictLog,
): ColumnPlan {
  const columns = new Map(current);
  const changes: ColumnChange[] = [];
  for (const [column, t] of incoming) {
    const cur = columns.get(column);
    if (cur === undefined) {
      const twin = caseTwin(columns, column);
      changes.push({ kind: 'add', column, type: t, ...(twin !== undefined && { caseTwin: twin }) });
      columns.set(column, cloneType(t));
      continue;
    }
    const joined = joinTypes(cur, t, [column], conflicts);
    if (typeName(joined) === typeName(cur)) {
      // No DDL, but an open part may have been decided (a STRUCT field still null): the table's type keeps the news.
      if (!sameType(joined, cur)) columns.set(column, cloneType(joined));
      continue;
    }
    changes.push({ kind: 'widen', column, from: cur, to: joined });
    columns.set(column, cloneType(joined));
  }
  return { columns, changes };
}

/** Whether rows of `incoming` fit the table's columns as they are (undefined: no table yet). */
export function fitsColumns(
  columns: ReadonlyMap<string, LogicalType> | undefined,
  incoming: ReadonlyMap<string, LogicalType>,
  typeName: TypeName,
): boolean {
  if (!columns) return false;
  for (const [k, t] of incoming) {
    const cur = columns.get(k);
    if (cur === undefined || typeName(joinTypes(cur, t, [k])) !== typeName(cur)) return false;
  }
  return true;
}

/**
 * The database refused a change of the plan (`reason`: its message's first line): what was tried, and how to make the
 * data fit the table instead.
 */
export function columnChangeRefused(change: ColumnChange, table: string, reason: string, cause: unknown): SluiceError {
  const what =
    change.kind === 'widen'
      ? `change column "${change.column}" of ${table} from ${describeType(change.from)} to ${describeType(change.to)}`
      : `add column "${change.column}" ${describeType(change.type)} to ${table}`;
  return new SluiceError(`cannot ${what}: ${reason}`, {
    hint: `the data no longer fits the table: convert the field in the pipeline (e.g. \`{ type: cast, fields: { ${change.column}: text } }\`), or write to a new table`,
    cause,
  });
}
