/**
 * Tables as ClickHouse holds them: their columns (system.columns: type and comment), the DDL that creates the target
 * or a unit's staging table, and schema evolution (ADD COLUMN, MODIFY COLUMN, COMMENT COLUMN) as the plan of
 * warehouse/evolve.ts says.
 *
 * The target is a MergeTree ordered by nothing (`ORDER BY tuple()`: rows stay in the order they came), or for
 * `merge` a ReplacingMergeTree ordered by the key with `_sluice_version` deciding which row of a key stays. Every
 * table has `_sluice_load String MATERIALIZED …`: hidden from `SELECT *`, it holds the id of the load that attached
 * the row — a staging table's default is its load's id, so each row carries it without being sent — and it is how a
 * rerun finds out whether a load it did not see finish was attached (unit.ts). A staging table has the target's
 * columns, engine and key, so that `ATTACH PARTITION tuple() FROM` takes its rows in one step.
 */
import type { LogicalType } from '../../src/core/logical-type.js';
import { cloneType } from '../../src/core/logical-type.js';
import type { ConflictLog } from '../../src/schema/conflicts.js';
import { joinTypes } from '../../src/schema/join.js';
import { evolveColumns, type ColumnDdl } from '../../src/sink-kit/warehouse/evolve.js';
import { LOAD_COLUMN, VERSION_COLUMN } from './config.js';
import { errorCode, errorLine, type Server } from './connection.js';
import { chColumn, chTypeName, fromColumn, literal, quoteIdent, type ColumnType } from './types.js';
import type { SchemaChange } from '../../src/core/types.js';

/** A table's data columns as declared (hidden columns left out), in table order. */
export type ChColumns = Map<string, ColumnType>;

const HIDDEN = new Set([LOAD_COLUMN, VERSION_COLUMN]);

/** The columns of `database.table`, or undefined when it does not exist. */
export async function readColumns(server: Server, database: string, table: string): Promise<ChColumns | undefined> {
  const rows = await server.rows<{ name: string; type: string; comment: string }>(
    `SELECT name, type, comment FROM system.columns WHERE database = ${literal(database)} AND table = ${literal(table)}`,
  );
  if (rows.length === 0) return undefined;
  return new Map(rows.filter((r) => !HIDDEN.has(r.name)).map((r) => [r.name, { type: r.type, comment: r.comment }]));
}

/** The columns as logical types (what the schema gate and the evolution plan work with). */
export function logicalColumns(columns: ChColumns): Map<string, LogicalType> {
  return new Map([...columns].map(([k, c]) => [k, fromColumn(c.type, c.comment)]));
}

/** Whether two tables' columns are the same names of the same types: what ATTACH PARTITION … FROM asks. */
export function sameShape(a: ChColumns, b: ChColumns): boolean {
  if (a.size !== b.size) return false;
  for (const [k, c] of a) if (b.get(k)?.type !== c.type) return false;
  return true;
}

/**
 * The columns of a new table: the declared ones in their order (joined with the data's), then the data's. The
 * `merge` key's columns cannot be Nullable (they are the table's ORDER BY).
 */
export function initialColumns(
  declared: ReadonlyMap<string, LogicalType> | undefined,
  incoming: ReadonlyMap<string, LogicalType>,
  keys: readonly string[],
): ChColumns {
  const logical = new Map<string, LogicalType>();
  for (const [k, t] of declared ?? []) {
    const data = incoming.get(k);
    logical.set(k, cloneType(data === undefined ? t : joinTypes(t, data, [k])));
  }
  for (const [k, t] of incoming) if (!logical.has(k)) logical.set(k, cloneType(t));
  return new Map([...logical].map(([k, t]) => [k, chColumn(t, !keys.includes(k))]));
}

function columnDef(name: string, c: ColumnType): string {
  return `${quoteIdent(name)} ${c.type}${c.comment === '' ? '' : ` COMMENT ${literal(c.comment)}`}`;
}

export interface TableShape {
  /** `write: merge`'s key: a ReplacingMergeTree ordered by it; undefined: a MergeTree in arrival order. */
  keys?: readonly string[];
}

/**
 * `CREATE TABLE` of a target (`load` undefined: its `_sluice_load` is empty unless a staging table's rows bring
 * theirs) or of a unit's staging table (`load`: the id every row it takes is marked with; its `_sluice_version` is a
 * plain column, sent with each row).
 */
export function createTableSql(qualifiedName: string, columns: ChColumns, shape: TableShape, load?: string): string {
  const defs = [...columns].map(([k, c]) => columnDef(k, c));
  defs.push(`${quoteIdent(LOAD_COLUMN)} String MATERIALIZED ${literal(load ?? '')}`);
  if (shape.keys) defs.push(`${quoteIdent(VERSION_COLUMN)} UInt64${load === undefined ? ' MATERIALIZED 0' : ''}`);
  const engine = shape.keys
    ? `ReplacingMergeTree(${quoteIdent(VERSION_COLUMN)}) ORDER BY (${shape.keys.map(quoteIdent).join(', ')})`
    : 'MergeTree ORDER BY tuple()';
  return `CREATE TABLE IF NOT EXISTS ${qualifiedName} (\n  ${defs.join(',\n  ')}\n) ENGINE = ${engine}`;
}

/** ClickHouse's codes for a column that is already there / not there: another writer changed the table first. */
const DUPLICATE_COLUMN = /column with this name already exists/i;

/** How ClickHouse changes a table's columns (warehouse/evolve.ts `evolveColumns` runs the plan). */
export function columnDdl(server: Server, keys: readonly string[]): ColumnDdl {
  return {
    typeName: chTypeName,
    add: (q, step) => {
      const c = chColumn(step.type, !keys.includes(step.column));
      const col = quoteIdent(step.column);
      const comment = c.comment === '' ? '' : `, COMMENT COLUMN ${col} ${literal(c.comment)}`;
      return `ALTER TABLE ${q} ADD COLUMN ${col} ${c.type}${comment}`;
    },
    widen: (q, { column, from, to }) => {
      const [a, b] = [chColumn(from), chColumn(to)];
      const col = quoteIdent(column);
      const actions = [
        ...(a.type === b.type ? [] : [`MODIFY COLUMN ${col} ${b.type}`]),
        ...(a.comment === b.comment ? [] : [`COMMENT COLUMN ${col} ${literal(b.comment)}`]),
      ];
      return `ALTER TABLE ${q} ${actions.join(', ')}`;
    },
    widened: (step) => [
      { column: step.column, change: 'widened', from: chTypeName(step.from), to: chTypeName(step.to) },
    ],
    run: async (sql) => {
      try {
        await server.exec(sql);
      } catch (err) {
        // Added meanwhile by another unit or process: the caller reads the columns again and goes on from there.
        if (errorCode(err) === 44 && DUPLICATE_COLUMN.test(String((err as Error).message))) return;
        throw err;
      }
    },
    errorLine,
  };
}

/** Adds and widens columns of `qualifiedName` (whose columns are `current`) so rows of `incoming` fit. */
export async function evolveTable(
  server: Server,
  qualifiedName: string,
  current: ChColumns,
  incoming: ReadonlyMap<string, LogicalType>,
  conflicts: ConflictLog,
  keys: readonly string[],
): Promise<SchemaChange[]> {
  const evo = await evolveColumns(qualifiedName, logicalColumns(current), incoming, conflicts, columnDdl(server, keys));
  return evo.changes;
}
