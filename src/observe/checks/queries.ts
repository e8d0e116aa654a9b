/**
 * Each check kind as SQL over a sink's committed rows, in the sink's dialect (DuckDB, PostgreSQL or ClickHouse, which
 * agree on everything here but how a timestamp becomes epoch milliseconds). A check that counts violations runs two queries:
 * how many, and a few of them for the report.
 */
import { quoteIdent } from '../../core/sql.js';
import type { QueryableOutput } from '../../core/types.js';
import type { CheckConfig } from './config.js';

/** Violating rows shown per check. */
export const SAMPLE_ROWS = 5;

export function literal(v: string | number | boolean): string {
  if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  return String(v);
}

/** The SQL of a check that returns violating rows: the count, and a few of them. */
export interface ViolationQueries {
  /** What a violation is, for the report: `row(s) where id is null`. */
  what: string;
  count: string;
  sample: string;
}

/** The check's default name: its type and columns, `not_null(id, name)`. */
export function checkName(c: CheckConfig): string {
  if (c.name !== undefined) return c.name;
  switch (c.type) {
    case 'row_count':
      return c.scope === 'run' ? 'row_count(run)' : 'row_count';
    case 'freshness':
    case 'accepted_values':
      return `${c.type}(${c.column})`;
    case 'not_null':
    case 'unique':
      return `${c.type}(${c.columns.join(', ')})`;
    case 'sql':
      return c.name;
  }
}

/** Queries for the checks that look for violating rows; undefined for the ones that measure (row_count, freshness). */
export function violationQueries(c: CheckConfig, out: QueryableOutput): ViolationQueries | undefined {
  const rel = out.relation;
  switch (c.type) {
    case 'not_null': {
      const where = c.columns.map((col) => `${quoteIdent(col)} IS NULL`).join(' OR ');
      return {
        what: `row(s) where ${c.columns.join(' or ')} is null`,
        count: `SELECT count(*) AS n FROM ${rel} t WHERE ${where}`,
        sample: `SELECT * FROM ${rel} t WHERE ${where} LIMIT ${SAMPLE_ROWS}`,
      };
    }
    case 'unique': {
      const cols = c.columns.map(quoteIdent).join(', ');
      const dupes = `SELECT ${cols}, count(*) AS count FROM ${rel} t GROUP BY ${cols} HAVING count(*) > 1`;
      return {
        what: `value(s) of ${c.columns.join(', ')} that repeat`,
        count: `SELECT count(*) AS n FROM (${dupes}) d`,
        sample: `${dupes} ORDER BY count DESC LIMIT ${SAMPLE_ROWS}`,
      };
    }
    case 'accepted_values': {
      const col = quoteIdent(c.column);
      const where = `${col} IS NOT NULL AND ${col} NOT IN (${c.values.map(literal).join(', ')})`;
      return {
        what: `row(s) whose ${c.column} is not one of ${c.values.map((v) => JSON.stringify(v)).join(', ')}`,
        count: `SELECT count(*) AS n FROM ${rel} t WHERE ${where}`,
        sample: `SELECT ${col} AS value, count(*) AS count FROM ${rel} t WHERE ${where} GROUP BY ${col} ORDER BY count DESC LIMIT ${SAMPLE_ROWS}`,
      };
    }
    case 'sql': {
      // On lines of its own: a `--` comment ending the check must not comment out the wrapper's `) v`.
      const query = c.sql.trim().replace(/;\s*$/, '').replaceAll('{table}', rel);
      return {
        what: 'violating row(s)',
        count: `SELECT count(*) AS n FROM (\n${query}\n) v`,
        sample: `SELECT * FROM (\n${query}\n) v LIMIT ${SAMPLE_ROWS}`,
      };
    }
    default:
      return undefined;
  }
}

export function rowCountQuery(out: QueryableOutput): string {
  return `SELECT count(*) AS n FROM ${out.relation} t`;
}

/** The newest value of `column` as epoch milliseconds (null when the table has none). */
export function newestQuery(column: string, out: QueryableOutput): string {
  const col = quoteIdent(column);
  const ms =
    out.dialect === 'postgres'
      ? `(extract(epoch FROM max(${col})) * 1000)::float8`
      : out.dialect === 'clickhouse'
        ? // Timestamps are ISO 8601 text there (one width: the greatest is the newest); seconds are enough here.
          `toUnixTimestamp(parseDateTimeBestEffortOrNull(toString(max(${col})))) * 1000`
        : `epoch_ms(max(TRY_CAST(${col} AS TIMESTAMPTZ)))`;
  return `SELECT ${ms} AS ms FROM ${out.relation} t`;
}
