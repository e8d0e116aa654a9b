/**
 * A DuckDB table's columns as logical types, and schema evolution: new columns are added, widened types are
 * changed in place with ALTER COLUMN TYPE and a conversion of the existing values.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import { duckdbType, fromDuckDBType } from '../../src/schema/duckdb-types.js';
import { quoteIdent, quoteString } from '../../src/core/sql.js';
import { fitsColumns } from '../../src/schema/column-changes.js';
import { cloneType, sameType, type LogicalType } from '../../src/core/logical-type.js';
import type { SchemaChange } from '../../src/core/types.js';
import type { ColumnDdl, Columns } from '../../src/sink-kit/warehouse/evolve.js';

export type { Columns };

/** `"schema"."table"`. */
export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

export async function tableExists(conn: DuckDBConnection, schema: string, table: string): Promise<boolean> {
  const r = await conn.runAndReadAll(
    `SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = ${quoteString(schema)} AND table_name = ${quoteString(table)}`,
  );
  return r.currentRowCount > 0;
}

/** The table's columns, or undefined when it does not exist. */
export async function readColumns(conn: DuckDBConnection, schema: string, table: string): Promise<Columns | undefined> {
  if (!(await tableExists(conn, schema, table))) return undefined;
  const r = await conn.runAndReadAll(`SELECT * FROM ${qualified(schema, table)} LIMIT 0`);
  const names = r.columnNames();
  const types = r.columnTypes();
  return new Map(names.map((n, i) => [n, fromDuckDBType(types[i]!)]));
}

export async function createTable(
  conn: DuckDBConnection,
  schema: string,
  table: string,
  columns: ReadonlyMap<string, LogicalType>,
): Promise<Columns> {
  const defs = [...columns].map(([k, t]) => `${quoteIdent(k)} ${duckdbType(t)}`);
  await conn.run(`CREATE TABLE ${qualified(schema, table)} (${defs.join(', ')})`);
  return new Map([...columns].map(([k, t]) => [k, cloneType(t)]));
}

/** How DuckDB changes a table's columns (warehouse/evolve.ts `evolveColumns` runs the plan). */
export function columnDdl(conn: DuckDBConnection): ColumnDdl {
  return {
    typeName: duckdbType,
    add: (q, step) => {
      if (step.caseTwin !== undefined)
        throw new SluiceError(
          `column "${step.column}" of the data and column "${step.caseTwin}" of ${q} differ only in case`,
          {
            hint: 'DuckDB column names ignore case: rename the field (e.g. with the `rename` transform) to match the table, or to a distinct name',
          },
        );
      return `ALTER TABLE ${q} ADD COLUMN ${quoteIdent(step.column)} ${duckdbType(step.type)}`;
    },
    widen: (q, { column, from, to }) =>
      `ALTER TABLE ${q} ALTER COLUMN ${quoteIdent(column)} SET DATA TYPE ${duckdbType(to)} USING ${convertExpr(quoteIdent(column), from, to, 0)}`,
    widened: (step) => typeChanges(step.column, step.from, step.to),
    run: async (sql) => void (await conn.run(sql)),
    errorLine: (err) => (err as Error).message.split('\n')[0] ?? '',
  };
}

/**
 * What widening a column from `from` to `to` changed, field by field: a struct gaining a field is that field added
 * (`details.color`, `items[].sku`), not the whole struct retyped.
 */
export function typeChanges(column: string, from: LogicalType, to: LogicalType): SchemaChange[] {
  if (duckdbType(from) === duckdbType(to)) return [];
  if (from.kind === 'struct' && to.kind === 'struct' && from.fields.size > 0) {
    const out: SchemaChange[] = [];
    for (const [k, t] of to.fields) {
      const f = from.fields.get(k);
      const path = `${column}.${k}`;
      if (f === undefined) out.push({ column: path, change: 'added', to: duckdbType(t) });
      else out.push(...typeChanges(path, f, t));
    }
    return out;
  }
  if (from.kind === 'list' && to.kind === 'list') return typeChanges(`${column}[]`, from.element, to.element);
  return [{ column, change: 'widened', from: duckdbType(from), to: duckdbType(to) }];
}

/**
 * SQL turning a value of type `from` (the expression `expr`) into type `to`, where `to` is `from` widened. Plain
 * casts do most of it; JSON needs `to_json` (a cast would parse text as JSON), and structs are rebuilt field by
 * field because a cast through JSON insists on every target field being present.
 */
export function convertExpr(expr: string, from: LogicalType, to: LogicalType, depth: number): string {
  if (sameType(from, to) || duckdbType(from) === duckdbType(to)) return expr;
  if (to.kind === 'json') return from.kind === 'null' ? `CAST(${expr} AS JSON)` : `to_json(${expr})`;
  if (to.kind === 'struct' && from.kind === 'struct' && to.fields.size > 0) {
    const parts = [...to.fields].map(([k, ft]) => {
      const fFrom = from.fields.get(k);
      const v =
        fFrom === undefined
          ? `CAST(NULL AS ${duckdbType(ft)})`
          : convertExpr(`struct_extract(${expr}, ${quoteString(k)})`, fFrom, ft, depth + 1);
      return `${quoteIdent(k)} := ${v}`;
    });
    return `CASE WHEN ${expr} IS NULL THEN NULL ELSE struct_pack(${parts.join(', ')}) END`;
  }
  if (to.kind === 'list' && from.kind === 'list') {
    const x = `x${depth}`;
    return `list_transform(${expr}, lambda ${x}: ${convertExpr(x, from.element, to.element, depth + 1)})`;
  }
  // DuckDB's text → TIMESTAMP cast ignores a UTC offset; through TIMESTAMPTZ (session zone UTC) it is applied.
  if (to.kind === 'timestamp' && from.kind === 'varchar') return `CAST(CAST(${expr} AS TIMESTAMPTZ) AS TIMESTAMP)`;
  return `CAST(${expr} AS ${duckdbType(to)})`;
}

/** Whether rows of `incoming` fit the table's columns as they are (undefined: no table yet). */
export function fitsTable(columns: Columns | undefined, incoming: ReadonlyMap<string, LogicalType>): boolean {
  return fitsColumns(columns, incoming, duckdbType);
}
