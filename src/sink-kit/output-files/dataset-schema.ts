/**
 * The columns of a file sink's dataset (a directory of JSONL or Parquet files), kept in its manifest, and the rules
 * that make them agree with the DuckDB sink's table for the same data:
 *
 * - a column (or struct field) exists once a value decided its type: columns that are null in every row so far are
 *   left out, as the DuckDB sink never creates them (its table cannot hold an undecided type, and a Parquet column
 *   written as VARCHAR meanwhile would turn a later BIGINT into VARCHAR in a union of the files);
 * - declared columns (a normalizer preset's) always exist, first, with the declared type, whatever the rows hold.
 */
import type { SchemaChange } from '../../core/types.js';
import type { ConflictLog } from '../../schema/conflicts.js';
import type { DeclaredSchema } from '../../core/declared.js';
import { InferredSchema } from '../../schema/infer.js';
import {
  deserializeType,
  serializeType,
  withoutOpenParts,
  type LogicalType,
  type SerializedType,
} from '../../core/logical-type.js';

export type SerializedColumns = [string, SerializedType][];

export function serializeColumns(columns: ReadonlyMap<string, LogicalType>): SerializedColumns {
  return [...columns].map(([k, t]) => [k, serializeType(t)]);
}

export function deserializeColumns(columns: SerializedColumns): Map<string, LogicalType> {
  return new Map(columns.map(([k, s]) => [k, deserializeType(s)]));
}

/**
 * The dataset's columns: the declared ones first (declaration order, declared type widened by what the data
 * holds), then every column some part decided, each joined over all `parts` with the one widening rule (join.ts).
 * Undefined when no part holds a decided column and nothing is declared.
 */
export function datasetColumns(
  parts: Iterable<ReadonlyMap<string, LogicalType>>,
  declared?: DeclaredSchema,
): Map<string, LogicalType> | undefined {
  return joinDataset(parts, declared).columns;
}

/** `datasetColumns`, with the conflicts the join met (names that differ only in case among them). */
export function joinDataset(
  parts: Iterable<ReadonlyMap<string, LogicalType>>,
  declared?: DeclaredSchema,
): { columns: Map<string, LogicalType> | undefined; conflicts: ConflictLog } {
  const joined = new InferredSchema();
  if (declared && declared.length > 0) joined.absorb(new Map(declared.map((c) => [c.name, c.type])));
  for (const p of parts) joined.absorb(p);
  const isDeclared = new Set(declared?.map((c) => c.name));
  const out = new Map<string, LogicalType>();
  for (const [k, t] of joined.columns) {
    const d = isDeclared.has(k) ? t : withoutOpenParts(t);
    if (d !== undefined) out.set(k, d);
  }
  return { columns: out.size > 0 ? out : undefined, conflicts: joined.conflicts };
}

/**
 * What taking the dataset from `before` to `after` changed, per column path (`a`, `s.b`, `l[].c`), in the sink's
 * type names. Nothing when there was no dataset before: creating it is not a change of it.
 */
export function schemaChanges(
  before: ReadonlyMap<string, LogicalType> | undefined,
  after: ReadonlyMap<string, LogicalType>,
  typeName: (t: LogicalType) => string,
): SchemaChange[] {
  if (before === undefined) return [];
  const out: SchemaChange[] = [];
  const walk = (path: string, from: LogicalType | undefined, to: LogicalType): void => {
    if (from === undefined) {
      out.push({ column: path, change: 'added', to: typeName(to) });
    } else if (from.kind === 'struct' && to.kind === 'struct') {
      for (const [k, t] of to.fields) walk(`${path}.${k}`, from.fields.get(k), t);
    } else if (from.kind === 'list' && to.kind === 'list') {
      walk(`${path}[]`, from.element, to.element);
    } else if (typeName(from) !== typeName(to)) {
      out.push({ column: path, change: 'widened', from: typeName(from), to: typeName(to) });
    }
  };
  for (const [k, t] of after) walk(k, before.get(k), t);
  return out;
}

/**
 * Whether values of type `from` (as a published Parquet file holds them) cannot be read as `to` by
 * `read_parquet(union_by_name = true)`: DuckDB parses VARCHAR as JSON text instead of quoting it, so a file whose
 * column (or field, or list element) is VARCHAR where the dataset now has JSON must be rewritten. DuckDB's union
 * casts every other widening sluice makes (BIGINT → DOUBLE, DATE → TIMESTAMP, scalar → VARCHAR, anything else →
 * JSON, struct fields added) as the DuckDB sink's ALTER does (test/sinks/parquet/dataset.test.ts).
 */
export function unreadableAs(from: LogicalType, to: LogicalType): boolean {
  if (to.kind === 'json') return from.kind === 'varchar';
  if (from.kind === 'struct' && to.kind === 'struct') {
    for (const [k, t] of from.fields) {
      const u = to.fields.get(k);
      if (u !== undefined && unreadableAs(t, u)) return true;
    }
    return false;
  }
  if (from.kind === 'list' && to.kind === 'list') return unreadableAs(from.element, to.element);
  return false;
}

/**
 * Whether widening `from` to `to` turns values (at any depth) into text: VARCHAR or JSON. Such a conversion
 * depends on the path a value took — the DuckDB sink's table turned BIGINT into DOUBLE into VARCHAR (`1` → `1.0`
 * → `'1.0'`), while a union of files casts a file's BIGINT to VARCHAR directly (`'1'`) — so files holding a type
 * older than `from` are rewritten along the table's path.
 */
export function textifies(from: LogicalType, to: LogicalType): boolean {
  if (to.kind === 'varchar' || to.kind === 'json') return from.kind !== to.kind;
  if (from.kind === 'struct' && to.kind === 'struct') {
    for (const [k, t] of from.fields) {
      const u = to.fields.get(k);
      if (u !== undefined && textifies(t, u)) return true;
    }
    return false;
  }
  if (from.kind === 'list' && to.kind === 'list') return textifies(from.element, to.element);
  return false;
}
