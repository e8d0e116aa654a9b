/**
 * Text meeting a DATE or TIMESTAMP column of the table, decided before the load. Rows from JS carry text wherever
 * no transform typed a value, and a raw file may hold text that sluice's ISO check did not take for a timestamp but
 * DuckDB parses. When DuckDB can convert every such value of the unit, the column keeps its type and the text is
 * parsed on the way in; otherwise the column is widened to VARCHAR like any other conflict.
 *
 * The question is put to DuckDB as a query over the staged file (`TRY_CAST`, the conversion `read_json` applies
 * to a typed column), so no failed load has to be retried and no error message has to be read. Measured over the
 * values tried, `TRY_CAST` and `read_json` agreed except on text naming a time zone (`… America/New_York`), which
 * `TRY_CAST` takes and `read_json` refuses: such a unit fails with DuckDB's error instead of widening the column.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import { quoteIdent, quoteString } from '../../src/core/sql.js';
import { listOf, type LogicalType } from '../../src/core/logical-type.js';
import { readStagedSql } from './read.js';
import type { StagedUnit } from './stage.js';
import type { Columns } from './table.js';

/**
 * The unit's columns, with the text that meets the table's DATE / TIMESTAMP columns typed as those columns when
 * DuckDB converts all of it (per top-level column). Without such text, the unit's columns as they are.
 */
export async function fitTextToTemporal(
  conn: DuckDBConnection,
  unit: StagedUnit,
  table: Columns | undefined,
): Promise<ReadonlyMap<string, LogicalType>> {
  if (!table || unit.rows === 0) return unit.columns;
  const checks: { name: string; condition: string }[] = [];
  for (const [name, incoming] of unit.columns) {
    const current = table.get(name);
    const condition = current && textConverts(quoteIdent(name), current, incoming, 0);
    if (condition) checks.push({ name, condition });
  }
  if (checks.length === 0) return unit.columns;
  const read = readStagedSql(
    unit,
    checks.map(({ name }) => [name, duckdbType(unit.columns.get(name)!, { forRead: true })]),
  );
  const r = await conn.runAndReadAll(
    `SELECT ${checks.map(({ condition }, i) => `coalesce(bool_and(${condition}), true) AS c${i}`).join(', ')} FROM ${read}`,
  );
  const answers = r.getRows()[0]!;
  const fitted = new Map(unit.columns);
  checks.forEach(({ name }, i) => {
    if (answers[i] === true) fitted.set(name, typedAsTable(table.get(name)!, unit.columns.get(name)!));
  });
  return fitted;
}

/**
 * SQL that is true when every text value under `expr` (of type `incoming`) that meets a DATE / TIMESTAMP of
 * `table` converts to it; undefined when no text meets one.
 */
export function textConverts(
  expr: string,
  table: LogicalType,
  incoming: LogicalType,
  depth: number,
): string | undefined {
  if (incoming.kind === 'varchar' && (table.kind === 'timestamp' || table.kind === 'date'))
    // Through TIMESTAMPTZ, as the load reads it: a plain TIMESTAMP parse ignores a UTC offset in the text.
    return `(${expr} IS NULL OR TRY_CAST(${expr} AS ${table.kind === 'timestamp' ? 'TIMESTAMPTZ' : 'DATE'}) IS NOT NULL)`;
  if (table.kind === 'struct' && incoming.kind === 'struct') {
    const parts: string[] = [];
    for (const [k, field] of incoming.fields) {
      const current = table.fields.get(k);
      const c = current && textConverts(`struct_extract(${expr}, ${quoteString(k)})`, current, field, depth + 1);
      if (c) parts.push(c);
    }
    return parts.length === 0 ? undefined : `(${parts.join(' AND ')})`;
  }
  if (table.kind === 'list' && incoming.kind === 'list') {
    const x = `x${depth}`;
    const c = textConverts(x, table.element, incoming.element, depth + 1);
    return c && `coalesce(list_bool_and(list_transform(${expr}, lambda ${x}: ${c})), true)`;
  }
  return undefined;
}

/** `incoming` with its text that meets DATE / TIMESTAMP in `table` typed as those. */
function typedAsTable(table: LogicalType, incoming: LogicalType): LogicalType {
  if (incoming.kind === 'varchar' && (table.kind === 'timestamp' || table.kind === 'date')) return table;
  if (table.kind === 'struct' && incoming.kind === 'struct') {
    const fields = new Map<string, LogicalType>();
    for (const [k, field] of incoming.fields) {
      const current = table.fields.get(k);
      fields.set(k, current ? typedAsTable(current, field) : field);
    }
    return { kind: 'struct', fields };
  }
  if (table.kind === 'list' && incoming.kind === 'list') return listOf(typedAsTable(table.element, incoming.element));
  return incoming;
}
