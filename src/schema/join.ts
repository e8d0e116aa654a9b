/**
 * The widening rules: the least type that holds the values of both `a` and `b`.
 *
 *   null ⊔ t = t                      BIGINT ⊔ DOUBLE = DOUBLE          DATE ⊔ TIMESTAMP = TIMESTAMP
 *   LIST<a> ⊔ LIST<b> = LIST<a ⊔ b>   STRUCT ⊔ STRUCT = union of fields, shared fields joined
 *   other scalar pairs = VARCHAR (a text conflict)   container vs anything else = JSON (a JSON conflict)
 *   JSON ⊔ t = JSON                   native (a type of an existing table) ⊔ t = native (the database casts)
 */
import { ConflictLog, formatPath } from './conflicts.js';
import {
  DOUBLE,
  JSON_TYPE,
  TIMESTAMP,
  VARCHAR,
  listOf,
  type LogicalType,
  type StructType,
} from '../core/logical-type.js';

/** Never mutates `a` or `b`; returns `a` itself when `b` adds nothing. */
export function joinTypes(a: LogicalType, b: LogicalType, path: readonly string[], log?: ConflictLog): LogicalType {
  if (a === b) return a;
  if (b.kind === 'null') return a;
  if (a.kind === 'null') return b;
  if (a.kind === 'native') return a;
  if (b.kind === 'native') return b;
  if (a.kind === 'json') return a;
  if (a.kind === 'list' && b.kind === 'list') {
    const element = joinTypes(a.element, b.element, [...path, '[]'], log);
    return element === a.element ? a : listOf(element);
  }
  if (a.kind === 'struct' && b.kind === 'struct') return joinStructs(a, b, path, log);
  if (a.kind === b.kind) return a;
  let result: LogicalType;
  if (isContainer(a) || isContainer(b) || b.kind === 'json') result = JSON_TYPE;
  else if (isNumber(a) && isNumber(b)) return DOUBLE;
  else if (isTemporal(a) && isTemporal(b)) return TIMESTAMP;
  else result = VARCHAR;
  log?.typeConflict(formatPath(path), a, b, result);
  return result;
}

function joinStructs(a: StructType, b: StructType, path: readonly string[], log?: ConflictLog): StructType {
  let fields: Map<string, LogicalType> | undefined;
  for (const [k, bt] of b.fields) {
    const at = a.fields.get(k);
    if (at === undefined && log) {
      const twin = caseTwin(a.fields, k);
      if (twin !== undefined) log.caseConflict(formatPath([...path, k]), [twin, k]);
    }
    const jt = at === undefined ? bt : joinTypes(at, bt, [...path, k], log);
    if (jt !== at) (fields ??= new Map(a.fields)).set(k, jt);
  }
  return fields ? { kind: 'struct', fields } : a;
}

/** An existing field whose name equals `name` but for case: DuckDB and Parquet treat the two as one. */
export function caseTwin(fields: ReadonlyMap<string, unknown>, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const k of fields.keys()) if (k !== name && k.toLowerCase() === lower) return k;
  return undefined;
}

function isContainer(t: LogicalType): boolean {
  return t.kind === 'list' || t.kind === 'struct';
}
function isNumber(t: LogicalType): boolean {
  return t.kind === 'bigint' || t.kind === 'double';
}
function isTemporal(t: LogicalType): boolean {
  return t.kind === 'date' || t.kind === 'timestamp';
}
