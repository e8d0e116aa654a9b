/**
 * Logical types ↔ DuckDB. Parquet output goes through DuckDB too, so this one mapping gives both sinks
 * native STRUCT / LIST / TIMESTAMP / DATE columns.
 */
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';
import { quoteIdent } from '../core/sql.js';
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  NULL,
  TIMESTAMP,
  VARCHAR,
  listOf,
  nativeType,
  structOf,
  type LogicalType,
} from '../core/logical-type.js';

export interface DuckDBTypeOptions {
  /**
   * For `read_json(columns=…)`: timestamps are read as TIMESTAMPTZ, because DuckDB's plain TIMESTAMP parser drops
   * a UTC offset (`…+02:00`) instead of applying it. Inserting into a TIMESTAMP column converts back in UTC.
   */
  forRead?: boolean;
  /**
   * Type for open parts (only nulls seen) instead of DuckDB's `"NULL"`: Parquet has no NULL column type (DuckDB
   * would write INT32), and VARCHAR is the type least likely to clash with later files.
   */
  openAs?: string;
}

/**
 * The DuckDB type text. An open type (only nulls so far) is DuckDB's `"NULL"` type, which tables accept and which
 * widens to anything by ALTER later. A struct with no fields (only `{}` seen) has no DuckDB form and becomes JSON.
 */
export function duckdbType(t: LogicalType, opts: DuckDBTypeOptions = {}): string {
  switch (t.kind) {
    case 'null':
      return opts.openAs ?? '"NULL"';
    case 'boolean':
      return 'BOOLEAN';
    case 'bigint':
      return 'BIGINT';
    case 'double':
      return 'DOUBLE';
    case 'varchar':
      return 'VARCHAR';
    case 'timestamp':
      return opts.forRead ? 'TIMESTAMPTZ' : 'TIMESTAMP';
    case 'date':
      return 'DATE';
    case 'json':
      return 'JSON';
    case 'native':
      return t.sql;
    case 'list':
      return `${duckdbType(t.element, opts)}[]`;
    case 'struct':
      if (t.fields.size === 0) return 'JSON';
      return `STRUCT(${[...t.fields].map(([k, v]) => `${quoteIdent(k)} ${duckdbType(v, opts)}`).join(', ')})`;
  }
}

/** A column type of an existing table → logical type; types sluice never writes stay `native`. */
export function fromDuckDBType(t: DuckDBType): LogicalType {
  if (t.alias === 'JSON') return JSON_TYPE;
  switch (t.typeId) {
    case DuckDBTypeId.SQLNULL:
      return NULL;
    case DuckDBTypeId.BOOLEAN:
      return BOOLEAN;
    case DuckDBTypeId.TINYINT:
    case DuckDBTypeId.SMALLINT:
    case DuckDBTypeId.INTEGER:
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.UTINYINT:
    case DuckDBTypeId.USMALLINT:
    case DuckDBTypeId.UINTEGER:
      return BIGINT;
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      return DOUBLE;
    case DuckDBTypeId.VARCHAR:
      return VARCHAR;
    case DuckDBTypeId.TIMESTAMP:
      return TIMESTAMP;
    case DuckDBTypeId.DATE:
      return DATE;
    case DuckDBTypeId.LIST:
      return listOf(fromDuckDBType(t.valueType));
    case DuckDBTypeId.STRUCT:
      return structOf(t.entryNames.map((name, i) => [name, fromDuckDBType(t.entryTypes[i]!)]));
    default:
      return nativeType(t.toString());
  }
}
