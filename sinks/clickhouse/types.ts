/**
 * Logical types ↔ ClickHouse column types, and the quoting of names and text in ClickHouse SQL.
 *
 *   bigint → Nullable(Int64)       double → Nullable(Float64)       varchar → Nullable(String)
 *   boolean → Nullable(UInt8)      timestamp, date, json, struct → Nullable(String), the meaning in a COMMENT
 *   list of a scalar → Array(Nullable(…))      list of structs / lists / json → Nullable(String) (JSON text)
 *
 * Only what ClickHouse 18.16 (Debian bookworm's) and current releases both have. 18.16 has no Bool (UInt8 is what
 * it offers), no DateTime64 (its DateTime keeps whole seconds, and Date no day before 1970), no JSON type, and
 * Tuple or Nested columns that cannot gain a field later (ALTER cannot change them): so timestamps are ISO 8601 UTC
 * text with milliseconds (`2025-03-01T02:30:00.000Z`: one width, so text order is time order, and
 * `parseDateTimeBestEffort` reads it), dates `YYYY-MM-DD`, and nested records JSON text, which a user queries with
 * `visitParamExtract…` (18.16) or `JSONExtract…` (19.x on). A column's COMMENT (`sluice:TIMESTAMP`, `sluice:JSON`,
 * `sluice:LIST<DATE>` …) keeps what its text means, so the table's columns read back as the types they were made
 * for (`fromColumn`). Every column is Nullable (a record may lack any field); lists cannot be — ClickHouse has no
 * Nullable(Array) — so a null list is stored as an empty one. A `merge` table's key columns are not Nullable
 * either (18.16's sorting key refuses Nullable columns).
 */
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  TIMESTAMP,
  VARCHAR,
  listOf,
  nativeType,
  type LogicalType,
  type ScalarKind,
} from '../../src/core/logical-type.js';

/** A column's type as the table declares it: the ClickHouse type, and the comment that says what its text means. */
export interface ColumnType {
  type: string;
  comment: string;
}

/** `` `name` `` with backslashes and backquotes escaped. */
export function quoteIdent(name: string): string {
  return `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
}

/** `` `database`.`table` ``. */
export function qualified(database: string, table: string): string {
  return `${quoteIdent(database)}.${quoteIdent(table)}`;
}

/** `'text'` as a ClickHouse string literal: backslashes and quotes escaped (control characters may stay). */
export function literal(s: string): string {
  return `'${s.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

const SCALARS: Partial<Record<ScalarKind, ColumnType>> = {
  boolean: { type: 'UInt8', comment: 'BOOLEAN' },
  bigint: { type: 'Int64', comment: '' },
  double: { type: 'Float64', comment: '' },
  varchar: { type: 'String', comment: '' },
  timestamp: { type: 'String', comment: 'TIMESTAMP' },
  date: { type: 'String', comment: 'DATE' },
  json: { type: 'String', comment: 'JSON' },
};

const COMMENT_PREFIX = 'sluice:';

/** The column a logical type is stored in (`nullable: false` for a merge key). */
export function chColumn(t: LogicalType, nullable = true): ColumnType {
  const inner = innerColumn(t);
  const comment = inner.comment === '' ? '' : `${COMMENT_PREFIX}${inner.comment}`;
  if (!nullable || inner.type.startsWith('Array(') || t.kind === 'native') return { type: inner.type, comment };
  return { type: `Nullable(${inner.type})`, comment };
}

function innerColumn(t: LogicalType): ColumnType {
  switch (t.kind) {
    case 'null':
      return { type: 'String', comment: '' };
    case 'native':
      return { type: t.sql, comment: '' };
    case 'struct':
      return SCALARS.json!;
    case 'list': {
      const e = t.element;
      if (e.kind === 'null') return { type: 'Array(Nullable(String))', comment: '' };
      const scalar = e.kind === 'json' || e.kind === 'native' ? undefined : SCALARS[e.kind as ScalarKind];
      if (scalar === undefined) return SCALARS.json!;
      return { type: `Array(Nullable(${scalar.type}))`, comment: scalar.comment && `LIST<${scalar.comment}>` };
    }
    default:
      return SCALARS[t.kind]!;
  }
}

/** The type as DDL says it, and as `sluice schema` shows it: `Nullable(String) COMMENT 'sluice:TIMESTAMP'`. */
export function chTypeName(t: LogicalType): string {
  const c = chColumn(t);
  return c.comment === '' ? c.type : `${c.type} COMMENT ${literal(c.comment)}`;
}

const BY_COMMENT: Record<string, LogicalType> = {
  BOOLEAN,
  TIMESTAMP,
  DATE,
  JSON: JSON_TYPE,
};

const BY_TYPE: Record<string, LogicalType> = {
  Int8: BIGINT,
  Int16: BIGINT,
  Int32: BIGINT,
  Int64: BIGINT,
  UInt8: BIGINT,
  UInt16: BIGINT,
  UInt32: BIGINT,
  Float32: DOUBLE,
  Float64: DOUBLE,
  String: VARCHAR,
};

/**
 * A column of an existing table (system.columns' `type` and `comment`) → logical type: the comment first (what the
 * sink made it for), then the type; types sluice never makes (DateTime, Decimal, UUID, UInt64 …) stay `native`.
 */
export function fromColumn(type: string, comment: string): LogicalType {
  const bare = type.replace(/^Nullable\((.*)\)$/, '$1');
  const meaning = comment.startsWith(COMMENT_PREFIX) ? comment.slice(COMMENT_PREFIX.length) : '';
  const list = /^Array\((?:Nullable\()?([A-Za-z0-9]+)\)?\)$/.exec(bare);
  if (list) {
    const inner = /^LIST<(\w+)>$/.exec(meaning);
    const e = (inner && BY_COMMENT[inner[1]!]) ?? BY_TYPE[list[1]!];
    return e === undefined ? nativeType(type) : listOf(e);
  }
  return BY_COMMENT[meaning] ?? BY_TYPE[bare] ?? nativeType(type);
}
