/**
 * Schema inference over a stream: rows are observed batch by batch and every column's type is widened just enough
 * to hold what was seen (see `join.ts` for the rules). Conflicts that could only be resolved by falling back to
 * VARCHAR or JSON are collected in `conflicts`.
 *
 * This runs over every value of every row a sink writes, so the hot path compares nodes by identity, walks values
 * without building intermediate type trees, and only allocates when a type actually changes.
 */
import type { Batch, Row } from '../core/types.js';
import { DateOnly, parseIsoTimestamp } from '../core/values.js';
import { ConflictLog, formatPath } from './conflicts.js';
import { caseTwin, joinTypes } from './join.js';
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  NULL,
  TIMESTAMP,
  VARCHAR,
  cloneType,
  listOf,
  structOf,
  type LogicalType,
  type StructType,
} from '../core/logical-type.js';

/**
 * TIMESTAMP / DATE decided from ISO text rather than from `Date` / `DateOnly` values (see `temporalText`). Own
 * nodes, so a later string that is not a timestamp turns the column into VARCHAR quietly: it was text all along.
 */
const TEXT_TIMESTAMP: LogicalType = Object.freeze({ kind: 'timestamp' });
const TEXT_DATE: LogicalType = Object.freeze({ kind: 'date' });

export interface InferOptions {
  /**
   * Type ISO 8601 text as TIMESTAMP (`2024-01-02T03:04:05Z`, with or without offset) or DATE (`2024-01-02`) when
   * every string of a column is one, as DuckDB's JSON reader does. Every sink infers with it, on the native and
   * the JS path alike, so a column's type does not depend on the path or the sink (test/unit/fast-path-parity).
   */
  temporalText?: boolean;
  /**
   * Type every object as JSON without looking inside it. For a sink that stores any object as one document column
   * (Postgres' jsonb), the fields inside type nothing it creates, and walking them was a fifth of the inference.
   * Lists are still walked to their elements' kinds: a list of scalars is a native array there.
   */
  objectsAsJson?: boolean;
}

export class InferredSchema {
  /** Columns in order of first appearance. Struct nodes inside are owned (and mutated) by this schema. */
  private readonly root: StructType = structOf();
  readonly conflicts = new ConflictLog();
  /** Rows observed. */
  rows = 0;
  /** A JS `bigint` was seen: serialisers need a replacer (JSON.stringify throws on them). */
  sawBigInt = false;
  private readonly path: string[] = [];
  private readonly temporalText: boolean;
  private readonly objectsAsJson: boolean;

  constructor(opts: InferOptions = {}) {
    this.temporalText = opts.temporalText ?? false;
    this.objectsAsJson = opts.objectsAsJson ?? false;
  }

  observe(batch: Batch): void {
    for (let i = 0; i < batch.length; i++) this.observeRow(batch[i]!);
  }

  observeRow(row: Row): void {
    this.rows++;
    this.observeFields(this.root, row);
  }

  /** Column name → type. Live view: do not mutate. */
  get columns(): ReadonlyMap<string, LogicalType> {
    return this.root.fields;
  }

  column(name: string): LogicalType | undefined {
    return this.root.fields.get(name);
  }

  /** Widens this schema by another one (another unit's, or a table's), as if its rows had been observed here. */
  absorb(columns: ReadonlyMap<string, LogicalType>, conflicts?: ConflictLog): void {
    const other = structOf([...columns].map(([k, v]) => [k, cloneType(v)]));
    const joined = joinTypes(this.root, other, [], this.conflicts);
    if (joined !== this.root && joined.kind === 'struct') {
      for (const [k, v] of joined.fields) this.root.fields.set(k, cloneType(v));
    }
    if (conflicts) this.conflicts.absorb(conflicts);
  }

  /** A copy of the columns that later observations will not change. */
  snapshot(): Map<string, LogicalType> {
    const out = new Map<string, LogicalType>();
    for (const [k, v] of this.root.fields) out.set(k, cloneType(v));
    return out;
  }

  private observeFields(t: StructType, obj: Record<string, unknown>): void {
    const fields = t.fields;
    for (const k in obj) {
      const v = obj[k];
      const f = fields.get(k);
      if (f === undefined) {
        const twin = caseTwin(fields, k);
        this.path.push(k);
        if (twin !== undefined) this.conflicts.caseConflict(formatPath(this.path), [twin, k]);
        fields.set(k, v === null || v === undefined ? NULL : this.observeValue(NULL, v));
        this.path.pop();
      } else if (v !== null && v !== undefined) {
        this.path.push(k);
        const nf = this.observeValue(f, v);
        this.path.pop();
        if (nf !== f) fields.set(k, nf);
      }
    }
  }

  private observeValue(t: LogicalType, v: unknown): LogicalType {
    switch (typeof v) {
      case 'string':
        if (t === VARCHAR || t === JSON_TYPE) return t;
        if (this.temporalText && (t === NULL || t === TEXT_TIMESTAMP || t === TEXT_DATE)) return textKind(t, v);
        return this.widen(t, VARCHAR);
      case 'number':
        if (t === DOUBLE || t === JSON_TYPE) return t;
        if (Number.isSafeInteger(v)) return t === BIGINT ? t : this.widen(t, BIGINT);
        return this.widen(t, DOUBLE);
      case 'boolean':
        return t === BOOLEAN || t === JSON_TYPE ? t : this.widen(t, BOOLEAN);
      case 'bigint':
        this.sawBigInt = true;
        return t === BIGINT || t === DOUBLE || t === JSON_TYPE ? t : this.widen(t, BIGINT);
      case 'object':
        if (v === null) return t;
        if (Array.isArray(v)) return this.observeList(t, v);
        if (v instanceof Date) {
          // An invalid Date serialises as null: it says nothing about the type.
          if (Number.isNaN(v.getTime())) return t;
          return t === TIMESTAMP || t === JSON_TYPE ? t : this.widen(t, TIMESTAMP);
        }
        if (v instanceof DateOnly) return t === DATE || t === JSON_TYPE ? t : this.widen(t, DATE);
        return this.observeObject(t, v as Record<string, unknown>);
      default:
        // undefined, functions and symbols are dropped by JSON.stringify: absent, like null.
        return t;
    }
  }

  private observeList(t: LogicalType, arr: unknown[]): LogicalType {
    if (t.kind === 'json') return t;
    if (t.kind !== 'list' && t.kind !== 'null') return this.widen(t, this.observeList(NULL, arr));
    const before = t.kind === 'list' ? t.element : NULL;
    let e = before;
    this.path.push('[]');
    for (let i = 0; i < arr.length; i++) {
      const x = arr[i];
      if (x !== null && x !== undefined) e = this.observeValue(e, x);
    }
    this.path.pop();
    return t.kind === 'list' && e === before ? t : listOf(e);
  }

  private observeObject(t: LogicalType, obj: Record<string, unknown>): LogicalType {
    if (this.objectsAsJson) return t.kind === 'json' ? t : this.widen(t, JSON_TYPE);
    if (t.kind === 'struct') {
      this.observeFields(t, obj);
      return t;
    }
    if (t.kind === 'json') return t;
    const fresh = structOf();
    this.observeFields(fresh, obj);
    return t.kind === 'null' ? fresh : this.widen(t, fresh);
  }

  private widen(t: LogicalType, v: LogicalType): LogicalType {
    if (t.kind === 'null') return v;
    return joinTypes(t, v, this.path, this.conflicts);
  }
}

/** The type of ISO text `s` at a node that so far held only nulls or ISO text of kind `t`. */
function textKind(t: LogicalType, s: string): LogicalType {
  let k: LogicalType = VARCHAR;
  const n = s.length;
  if (n >= 10 && n <= 40 && s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45 && parseIsoTimestamp(s) !== null)
    k = n === 10 ? TEXT_DATE : TEXT_TIMESTAMP;
  if (t === NULL || t === k) return k;
  if (k === VARCHAR) return VARCHAR;
  return TEXT_TIMESTAMP; // dates and timestamps mixed
}
