/**
 * The column types sluice infers from rows, independent of any database. A tree: scalars, LIST of an element type,
 * STRUCT of named fields. `null` means "only nulls (or empty lists) seen so far": the type is still open and the
 * first real value decides it. `json` is the fallback when values of one column cannot share a type (an object in
 * one row, a string in another): every value is then kept as JSON text. `native` stands for a column type of an
 * existing table that sluice never produces itself (UUID, DECIMAL, MAP …); values are handed to the database to cast.
 */

export type ScalarKind = 'boolean' | 'bigint' | 'double' | 'varchar' | 'timestamp' | 'date' | 'json';

export interface NullType {
  readonly kind: 'null';
}
export interface ScalarType {
  readonly kind: ScalarKind;
}
export interface ListType {
  readonly kind: 'list';
  readonly element: LogicalType;
}
export interface StructType {
  readonly kind: 'struct';
  /** Field name → type, in order of first appearance. Owned by the schema that built it. */
  readonly fields: Map<string, LogicalType>;
}
export interface NativeType {
  readonly kind: 'native';
  /** The database's own type text, e.g. `UUID`, `DECIMAL(18,3)`. */
  readonly sql: string;
}

export type LogicalType = NullType | ScalarType | ListType | StructType | NativeType;

// Scalars are shared singletons: comparing a node with `===` is the hot path's fast exit.
export const NULL: NullType = Object.freeze({ kind: 'null' });
export const BOOLEAN: ScalarType = Object.freeze({ kind: 'boolean' });
export const BIGINT: ScalarType = Object.freeze({ kind: 'bigint' });
export const DOUBLE: ScalarType = Object.freeze({ kind: 'double' });
export const VARCHAR: ScalarType = Object.freeze({ kind: 'varchar' });
export const TIMESTAMP: ScalarType = Object.freeze({ kind: 'timestamp' });
export const DATE: ScalarType = Object.freeze({ kind: 'date' });
export const JSON_TYPE: ScalarType = Object.freeze({ kind: 'json' });

const SCALARS: Record<ScalarKind, ScalarType> = {
  boolean: BOOLEAN,
  bigint: BIGINT,
  double: DOUBLE,
  varchar: VARCHAR,
  timestamp: TIMESTAMP,
  date: DATE,
  json: JSON_TYPE,
};

export function listOf(element: LogicalType): ListType {
  return { kind: 'list', element };
}

export function structOf(fields: Iterable<[string, LogicalType]> = []): StructType {
  return { kind: 'struct', fields: new Map(fields) };
}

export function nativeType(sql: string): NativeType {
  return { kind: 'native', sql };
}

/** A copy that shares nothing mutable with `t` (struct field maps are the only mutable part). */
export function cloneType(t: LogicalType): LogicalType {
  if (t.kind === 'list') return listOf(cloneType(t.element));
  if (t.kind === 'struct') {
    const fields = new Map<string, LogicalType>();
    for (const [k, v] of t.fields) fields.set(k, cloneType(v));
    return { kind: 'struct', fields };
  }
  return t;
}

/** Structural equality; struct field order does not matter (columns are matched by name). */
export function sameType(a: LogicalType, b: LogicalType): boolean {
  if (a === b) return true;
  if (a.kind !== b.kind) return false;
  if (a.kind === 'list') return sameType(a.element, (b as ListType).element);
  if (a.kind === 'native') return a.sql === (b as NativeType).sql;
  if (a.kind === 'struct') {
    const bf = (b as StructType).fields;
    if (a.fields.size !== bf.size) return false;
    for (const [k, v] of a.fields) {
      const w = bf.get(k);
      if (w === undefined || !sameType(v, w)) return false;
    }
    return true;
  }
  return true;
}

/**
 * The type with its open parts left out: null-only columns and struct fields, lists of nothing but empty lists,
 * and structs left with no fields become `undefined`. A table gets a column (or a struct field) only once a value
 * decides its type; until then its values are all null anyway. (DuckDB has a `"NULL"` column type, but a table
 * column of that type reads back as INTEGER, so it cannot stand for "not decided yet".)
 */
export function withoutOpenParts(t: LogicalType): LogicalType | undefined {
  if (t.kind === 'null') return undefined;
  if (t.kind === 'list') {
    const e = withoutOpenParts(t.element);
    return e === undefined ? undefined : e === t.element ? t : listOf(e);
  }
  if (t.kind === 'struct') {
    const fields = new Map<string, LogicalType>();
    for (const [k, v] of t.fields) {
      const r = withoutOpenParts(v);
      if (r !== undefined) fields.set(k, r);
    }
    return fields.size === 0 ? undefined : { kind: 'struct', fields };
  }
  return t;
}

/** Columns with their open parts left out (see `withoutOpenParts`); columns with nothing decided are dropped. */
export function decidedColumns(columns: ReadonlyMap<string, LogicalType>): Map<string, LogicalType> {
  const out = new Map<string, LogicalType>();
  for (const [k, t] of columns) {
    const r = withoutOpenParts(t);
    if (r !== undefined) out.set(k, r);
  }
  return out;
}

/** Short name for reports: `BIGINT`, `LIST`, `STRUCT`, `null`. */
export function kindName(t: LogicalType): string {
  if (t.kind === 'null') return 'null';
  if (t.kind === 'native') return t.sql;
  return t.kind === 'bigint' ? 'BIGINT' : t.kind.toUpperCase();
}

/** Full readable form: `STRUCT<{a: BIGINT, b: LIST<VARCHAR>}>`. */
export function describeType(t: LogicalType): string {
  if (t.kind === 'list') return `LIST<${describeType(t.element)}>`;
  if (t.kind === 'struct') {
    const parts = [...t.fields].map(([k, v]) => `${k}: ${describeType(v)}`);
    return `STRUCT<{${parts.join(', ')}}>`;
  }
  return kindName(t);
}

/** JSON-serialisable form, for manifests and state (`{"kind":"struct","fields":[["a",{"kind":"bigint"}]]}`). */
export type SerializedType =
  | { kind: 'null' | ScalarKind }
  | { kind: 'list'; element: SerializedType }
  | { kind: 'struct'; fields: [string, SerializedType][] }
  | { kind: 'native'; sql: string };

export function serializeType(t: LogicalType): SerializedType {
  if (t.kind === 'list') return { kind: 'list', element: serializeType(t.element) };
  if (t.kind === 'struct') return { kind: 'struct', fields: [...t.fields].map(([k, v]) => [k, serializeType(v)]) };
  if (t.kind === 'native') return { kind: 'native', sql: t.sql };
  return { kind: t.kind };
}

export function deserializeType(s: SerializedType): LogicalType {
  switch (s.kind) {
    case 'null':
      return NULL;
    case 'list':
      return listOf(deserializeType(s.element));
    case 'struct':
      return structOf(s.fields.map(([k, v]) => [k, deserializeType(v)]));
    case 'native':
      return nativeType(s.sql);
    default:
      if (!(s.kind in SCALARS)) throw new Error(`unknown column type in saved schema: ${JSON.stringify(s)}`);
      return SCALARS[s.kind];
  }
}

/** What a value of type `t` is in JSON text (the JSONL sink's type names): `number`, `string (timestamp)`, … */
export function jsonTypeName(t: LogicalType): string {
  switch (t.kind) {
    case 'null':
      return 'null';
    case 'boolean':
      return 'boolean';
    case 'bigint':
      return 'integer';
    case 'double':
      return 'number';
    case 'varchar':
      return 'string';
    case 'timestamp':
      return 'string (ISO timestamp)';
    case 'date':
      return 'string (ISO date)';
    case 'json':
      return 'any JSON';
    case 'native':
      return t.sql;
    case 'list':
      return `array of ${jsonTypeName(t.element)}`;
    case 'struct':
      return 'object';
  }
}
