/**
 * The schema-contract gate (src/schema/contract.ts says what each mode means): one per sink and unit, between the
 * unit's stream of batches and the sink, judging every row against the columns the sink has committed so far.
 * Applied here, once for every sink, so DuckDB, Parquet and JSONL decide the same; a sink only reports what it
 * changed.
 *
 * A row is judged value by value against the committed columns: a key (or struct field, also inside lists of
 * structs) the columns lack is a `columns` change; a value the column cannot hold is a `types` change; a safe
 * widening (an open column getting its first type, BIGINT → DOUBLE, DATE → TIMESTAMP) is a `types` change that
 * only `freeze` refuses. Every row is judged against what was committed, not against what earlier rows of the
 * unit would add: a new column's values are the data's, whatever their types.
 *
 * A value's type comes from the one inference every sink uses (schema/infer.ts, ISO text typed as a sink types it)
 * and is compared with the one widening rule (schema/join.ts): the gate has no type rules of its own.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { Batch, DeadLetter, DeadLetterFn, Row, Sink } from '../core/types.js';
import { formatPath } from '../schema/conflicts.js';
import { isEvolve, type ContractMode, type SchemaContract } from '../schema/contract.js';
import { InferredSchema } from '../schema/infer.js';
import { joinTypes } from '../schema/join.js';
import { sameType, withoutOpenParts, type LogicalType } from '../core/logical-type.js';

/** What a value would do to the committed columns. */
export interface ContractChange {
  /** Column path: `price`, `details.color`, `items[].sku`. */
  column: string;
  kind: 'new column' | 'type change' | 'widening';
  /** The sink's type name of the column (undefined for a new column). */
  from?: string;
  /** The sink's type name of what the value needs. */
  to: string;
}

export interface GateOptions {
  contract: SchemaContract;
  /** The sink's committed columns; undefined: nothing exists yet, every row passes. */
  columns: ReadonlyMap<string, LogicalType> | undefined;
  sink: Pick<Sink, 'describe' | 'typeName'>;
  /** The unit's id, for dead letters (the source's, as transforms' letters carry it). */
  unitId: string;
  deadLetter: DeadLetterFn;
}

/**
 * The stream the sink should read: `batches` itself when nothing is to be judged (the contract is `evolve`, or
 * there is no table yet), otherwise the gated stream, which dead-letters what the contract discards and throws a
 * `SchemaContractError` instead of ending when the contract freezes.
 */
export function gated(batches: AsyncIterable<Batch>, opts: GateOptions): AsyncIterable<Batch> {
  if (isEvolve(opts.contract) || opts.columns === undefined) return batches;
  return new Gate(opts).run(batches);
}

/** A unit refused by `freeze`: nothing of it was committed into the sink. */
export class SchemaContractError extends SluiceError {
  constructor(
    readonly sink: string,
    readonly unit: string,
    readonly changes: readonly ContractChange[],
  ) {
    super(
      `${sink}: unit ${unit} does not fit the table under schema_contract freeze: ${changes.map(describeChange).join('; ')}`,
      {
        hint:
          'nothing of the unit was committed into this sink. To let the table follow the data, set `schema_contract: evolve` (or ' +
          '`{ columns: evolve }` / `{ types: evolve }`) on the sink or the pipeline; to keep the table as it is, make ' +
          'the data fit with a transform (`select` to drop new fields, `cast` to convert a field to the column type), ' +
          'or choose `discard_row` / `discard_value` to dead-letter what does not fit',
        exitCode: EXIT_CODES.schemaContract,
      },
    );
    this.name = 'SchemaContractError';
  }
}

/** `new column extra (VARCHAR)`, `type change price: BIGINT → VARCHAR`. */
export function describeChange(c: ContractChange): string {
  return c.kind === 'new column' ? `new column ${c.column} (${c.to})` : `${c.kind} ${c.column}: ${c.from} → ${c.to}`;
}

/** Changes frozen in one unit, listed at most this many (the error must stay readable). */
const MAX_LISTED = 20;

class Gate {
  private readonly stage: string;
  private readonly frozen = new Map<string, ContractChange>();
  /** Ordinal of this gate's letters in the unit: keeps two letters with one reason apart. */
  private index = 0;

  constructor(private readonly opts: GateOptions) {
    this.stage = `sink:${opts.sink.describe()}`;
  }

  async *run(batches: AsyncIterable<Batch>): AsyncIterable<Batch> {
    for await (const batch of batches) {
      const out: Batch = [];
      for (const row of batch) {
        const kept = this.judge(row);
        if (kept !== undefined) out.push(kept);
      }
      // Once frozen, the rest of the unit is only read to name every change in one error.
      if (this.frozen.size === 0 && out.length > 0) yield out;
    }
    if (this.frozen.size > 0)
      throw new SchemaContractError(
        this.opts.sink.describe(),
        this.opts.unitId,
        [...this.frozen.values()].slice(0, MAX_LISTED),
      );
  }

  /** The row as it goes on, or undefined when it is discarded. */
  private judge(row: Row): Row | undefined {
    const found: Found[] = [];
    walkStruct(row, this.opts.columns!, [], found, this.opts.sink);
    if (found.length === 0) return row;
    let discardRow: Found[] | undefined;
    const discardValues: Found[] = [];
    for (const f of found) {
      const mode = this.modeOf(f.change);
      if (mode === 'evolve') continue;
      if (mode === 'freeze') {
        const key = `${f.change.kind}:${f.change.column}:${f.change.to}`;
        if (!this.frozen.has(key)) this.frozen.set(key, f.change);
      } else if (mode === 'discard_row') (discardRow ??= []).push(f);
      else discardValues.push(f);
    }
    if (this.frozen.size > 0) return undefined;
    if (discardRow) {
      this.letter(
        `row discarded by schema_contract: ${discardRow.map((f) => describeChange(f.change)).join('; ')}`,
        row,
      );
      return undefined;
    }
    if (discardValues.length === 0) return row;
    const copy = structuredCloneRow(row);
    for (const f of discardValues) {
      this.letter(`value discarded by schema_contract: ${describeChange(f.change)}`, f.value);
      removeAt(copy, f.at, f.change.kind === 'new column');
    }
    return copy;
  }

  private modeOf(c: ContractChange): ContractMode {
    if (c.kind === 'new column') return this.opts.contract.columns;
    const mode = this.opts.contract.types;
    // Safe widenings: only `freeze` keeps the table as it is.
    return c.kind === 'widening' && mode !== 'freeze' ? 'evolve' : mode;
  }

  private letter(reason: string, raw: unknown): void {
    // `index` is stored with the letter (dead-letter-file.ts): two rows discarded for one reason are two letters.
    const letter: DeadLetter & { index: number } = {
      unit: this.opts.unitId,
      stage: this.stage,
      reason,
      raw: JSON.stringify(raw, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)) ?? 'null',
      index: this.index++,
    };
    this.opts.deadLetter(letter);
  }
}

/** A change found at a value, and where the value sits in the row (keys and list indexes). */
interface Found {
  change: ContractChange;
  at: (string | number)[];
  value: unknown;
}

type Namer = Pick<Sink, 'typeName'>;

function walkStruct(
  obj: Record<string, unknown>,
  fields: ReadonlyMap<string, LogicalType>,
  path: (string | number)[],
  found: Found[],
  sink: Namer,
): void {
  for (const k in obj) {
    const v = obj[k];
    if (v === null || v === undefined) continue;
    const at = [...path, k];
    const t = fields.get(k);
    if (t === undefined) {
      // A value that decides no type (`[]`, `{}`) adds no column, as under `evolve`.
      const vt = decided(typeOf(v));
      if (vt !== undefined)
        found.push({ change: { column: columnPath(at), kind: 'new column', to: sink.typeName(vt) }, at, value: v });
      continue;
    }
    walkValue(v, t, at, found, sink);
  }
}

function walkValue(v: unknown, t: LogicalType, at: (string | number)[], found: Found[], sink: Namer): void {
  if (v === null || v === undefined) return;
  if (t.kind === 'json' || t.kind === 'native') return;
  if (t.kind === 'struct' && isPlainObject(v)) return walkStruct(v, t.fields, at, found, sink);
  if (t.kind === 'list' && Array.isArray(v)) {
    v.forEach((x, i) => walkValue(x, t.element, [...at, i], found, sink));
    return;
  }
  if (plainlyFits(v, t)) return;
  const vt = typeOf(v);
  if (t.kind === 'null') {
    const d = decided(vt);
    if (d !== undefined)
      found.push({
        change: { column: columnPath(at), kind: 'widening', from: 'null', to: sink.typeName(d) },
        at,
        value: v,
      });
    return;
  }
  const joined = joinTypes(t, vt, []);
  if (joined === t || sameType(joined, t)) return;
  const kind = isSafeWidening(t, joined) ? 'widening' : 'type change';
  found.push({
    change: { column: columnPath(at), kind, from: sink.typeName(t), to: sink.typeName(joined) },
    at,
    value: v,
  });
}

/**
 * The values that need no inference to fit: the bulk of every row, checked without allocating (the inference
 * below builds a schema per value). Anything else — text that may be a timestamp, nested values — is inferred.
 */
function plainlyFits(v: unknown, t: LogicalType): boolean {
  switch (typeof v) {
    case 'string':
      return t.kind === 'varchar';
    case 'number':
      return t.kind === 'double' || (t.kind === 'bigint' && Number.isSafeInteger(v));
    case 'boolean':
      return t.kind === 'boolean';
    default:
      return false;
  }
}

/** BIGINT → DOUBLE and DATE → TIMESTAMP keep every value the column holds, exactly. */
function isSafeWidening(from: LogicalType, to: LogicalType): boolean {
  return (from.kind === 'bigint' && to.kind === 'double') || (from.kind === 'date' && to.kind === 'timestamp');
}

/** The type every sink would infer for the value (ISO text as TIMESTAMP / DATE, as sinks type it). */
function typeOf(v: unknown): LogicalType {
  const s = new InferredSchema({ temporalText: true });
  s.observeRow({ v });
  return s.column('v')!;
}

function decided(t: LogicalType): LogicalType | undefined {
  return withoutOpenParts(t);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** `['items', 0, 'sku']` → `items[].sku`. */
function columnPath(at: readonly (string | number)[]): string {
  return formatPath(at.map((s) => (typeof s === 'number' ? '[]' : s)));
}

/** A copy of the containers on the way to every value, so removing values leaves the source's row untouched. */
function structuredCloneRow(row: Row): Row {
  const copy = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(copy)
      : isPlainObject(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copy(x)]))
        : v;
  return copy(row) as Row;
}

/**
 * Removes the value at `at`: a new column's (or field's) key goes, so no sink adds it; any other value becomes null
 * (the column exists).
 */
function removeAt(row: Row, at: readonly (string | number)[], dropKey: boolean): void {
  let node: unknown = row;
  for (let i = 0; i < at.length - 1; i++) node = (node as Record<string | number, unknown>)[at[i]!];
  if (node === null || typeof node !== 'object') return;
  const last = at[at.length - 1]!;
  if (dropKey && !Array.isArray(node)) delete (node as Record<string, unknown>)[last];
  else (node as Record<string | number, unknown>)[last] = null;
}
