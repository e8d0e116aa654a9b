/**
 * The record judge: whether a sink's store can hold a record, from the limits the sink declares
 * (`SinkCapabilities.limits`, core/types.ts) — one judge for every sink, so DuckDB, Postgres, Parquet and JSONL refuse
 * for the same reasons in the same words, and no sink finds a record it cannot hold only when it commits (the unit
 * fails) or publishes (the output is stuck).
 *
 * A record is refused for a name the store cannot hold (empty, NUL, too long, reserved, or — where names ignore
 * case — a spelling that differs only in case from one the store has or the run accepted), nesting deeper than the
 * store reads, more columns or a wider row than a table holds, a partition value that cannot be a directory name or
 * that a reader takes for null, and JSON text larger than the store reads. Under `on_unstorable: repair` names are
 * renamed (`<name>_<hash>`, shortened to fit) and over-long text is cut, and the repaired copy is judged again; what
 * cannot be repaired is refused all the same.
 *
 * A judge lives for one sink in one run: the spellings it accepted are the store's from then on, so two units that
 * run at once cannot bring `Name` and `name` into one DuckDB table. It walks each record once, never deeper than the
 * store's nesting limit, and remembers the names it accepted at each place in the record, so a record of known names
 * costs a map lookup per key.
 *
 * This file is the judge and its walk, the path every record takes. The rest runs only for some records or some
 * sinks, each in its own file: the repairs (storable-repair.ts), the partition checks (partition-values.ts), the
 * `on_unstorable` option (unstorable-option.ts) and the wording of reasons (unstorable-problem.ts).
 */
import type { RecordCheck, Row, StoreLimits, UnstorablePolicy } from '../core/types.js';
import { formatPath } from './conflicts.js';
import type { LogicalType } from '../core/logical-type.js';
import { partitionProblems } from './partition-values.js';
import { repairedCopy } from './storable-repair.js';
import {
  describeProblems as describe,
  isPlainObject,
  jsonBytes,
  pathText,
  quote,
  type Path,
  type Problem,
} from './unstorable-problem.js';

// The judge's neighbours, exported from here as before the split so that no importer changes.
export { onUnstorableOption, unstorablePolicy } from './unstorable-option.js';
export { escapedBytes } from './partition-values.js';

/** What the judge made of a record: the row to store (a repaired copy, then `repairs` says how), or why not. */
export type Verdict = { row: Row; repairs?: string[] } | { refused: string };

/** A place in records where values sit: the names accepted there (as an object) and its elements (as a list). */
class Place {
  readonly fields = new Map<string, Place>();
  /** Lower-cased name → the spelling accepted (stores whose names ignore case). */
  readonly folded = new Map<string, string>();
  element: Place | undefined;
}

/** Stands for every place where keys are data, not names: nothing is remembered there. */
const FREE = new Place();

/** One walk over a record. */
interface Walk {
  problems: Problem[];
  /** Names the walk added, taken back when the record is refused. */
  added: (() => void)[];
  /** Characters of keys and strings, and other values: a bound on the record's JSON size. */
  chars: number;
  values: number;
  /** The row's bytes in a table page (`maxRowBytes`), top-level values only, and its values that are not null. */
  rowBytes: number;
  topValues: number;
  /** Where the walk is: the keys and indexes down to the value it looks at (copied only into a problem). */
  at: Path;
}

/** Bytes an out-of-line value leaves in a Postgres row (a TOAST pointer, aligned): longer values are moved out. */
const OUT_OF_LINE_BYTES = 24;

/**
 * JSON text of a record parsed from a line is at most this many times the line's bytes: whitespace and escapes
 * only shrink, and the widest a number grows is `1e20` (4 bytes) written out as 21 digits.
 */
const LINE_TO_JSON = 6;

export class RecordJudge implements RecordCheck {
  private readonly root: Place;
  private readonly topNames: boolean;
  /** Only the records' nesting and size can make the store refuse them (no names, no row, no partitions). */
  private readonly shapeOnly: boolean;

  constructor(
    readonly limits: StoreLimits,
    private readonly policy: UnstorablePolicy = 'dead_letter',
  ) {
    this.topNames = limits.names !== 'none';
    this.root = this.topNames ? new Place() : FREE;
    this.shapeOnly =
      limits.names === 'none' &&
      Object.keys(limits.reservedNames ?? {}).length === 0 &&
      limits.maxRowBytes === undefined &&
      limits.partitions === undefined;
  }

  /**
   * Whether its verdicts depend on nothing but the record: no names are remembered (the store's names are free), so
   * a judge of the same limits elsewhere (a worker thread's) refuses exactly what this one does.
   */
  get stateless(): boolean {
    return this.limits.names === 'none';
  }

  /** The store's columns as committed: names spelt otherwise in case differ from them (and count as columns). */
  know(columns: ReadonlyMap<string, LogicalType>): void {
    if (!this.topNames) return;
    for (const [name, type] of columns) this.claim(this.root, name, type);
  }

  /** Why the store cannot hold `row` as it is, or undefined (its names are then claimed). Never repairs. */
  refusal(row: Row): string | undefined {
    const walk = this.walk(row);
    if (walk.problems.length === 0) return undefined;
    for (const undo of walk.added.reverse()) undo();
    return describe(walk.problems);
  }

  /**
   * `refusal` of a record parsed from a JSON line: where only nesting and size matter and the line is short enough
   * that its JSON cannot reach the size limit, only the nesting is looked at (a record that nests too deep is then
   * walked as `refusal` walks it, for the same reason in the same words).
   */
  refusalOfLine(row: Row, lineBytes: number): string | undefined {
    if (!this.shapeOnly || lineBytes * LINE_TO_JSON > this.limits.maxRecordBytes) return this.refusal(row);
    return nestsDeeper(row, 0, this.limits.maxNesting) ? this.refusal(row) : undefined;
  }

  judge(row: Row): Verdict {
    const walk = this.walk(row);
    if (walk.problems.length === 0) return { row };
    for (const undo of walk.added.reverse()) undo();
    const reason = describe(walk.problems);
    if (this.policy !== 'repair' || walk.problems.some((p) => !p.rename && !p.size)) return { refused: reason };
    const repairs: string[] = [];
    const copy = repairedCopy(row, walk.problems, this.limits, repairs);
    const again = this.walk(copy);
    if (again.problems.length === 0) return { row: copy, repairs };
    for (const undo of again.added.reverse()) undo();
    return { refused: `${reason} (not repairable: ${describe(again.problems)})` };
  }

  private claim(place: Place, name: string, type: LogicalType | undefined): Place {
    let child = place.fields.get(name);
    if (child === undefined) {
      child = this.limits.names === 'all' ? new Place() : FREE;
      place.fields.set(name, child);
      if (this.limits.caseInsensitive && !place.folded.has(name.toLowerCase()))
        place.folded.set(name.toLowerCase(), name);
    }
    if (type !== undefined && this.limits.names === 'all') this.claimType(child, type);
    return child;
  }

  private claimType(place: Place, type: LogicalType): void {
    if (type.kind === 'struct') for (const [k, t] of type.fields) this.claim(place, k, t);
    else if (type.kind === 'list') this.claimType((place.element ??= new Place()), type.element);
  }

  private walk(row: Row): Walk {
    const walk: Walk = { problems: [], added: [], chars: 0, values: 0, rowBytes: 0, topValues: 0, at: [] };
    this.walkObject(row, this.root, 0, walk);
    const l = this.limits;
    if (l.maxRowBytes !== undefined) {
      const bytes = 24 + Math.ceil(walk.topValues / 8) + walk.rowBytes;
      if (bytes > l.maxRowBytes)
        walk.problems.push({
          text: `a row of about ${bytes} bytes in the table's page: ${l.store} fits at most ${l.maxRowBytes} (numbers, booleans and timestamps take 8 bytes each; longer values are moved out of the row)`,
        });
    }
    if (l.partitions) partitionProblems(row, l.partitions, walk.problems);
    // Each character is at most 6 bytes of JSON (`\u001f`), a value other than text at most ~32: only a record that
    // could be over the limit is serialised to measure it.
    if (6 * walk.chars + 32 * walk.values > l.maxRecordBytes) {
      const bytes = jsonBytes(row);
      if (bytes > l.maxRecordBytes)
        walk.problems.push({
          text: `${bytes === Infinity ? 'more than 512 MiB' : `${bytes} bytes`} as JSON: ${l.store} reads records of at most ${l.maxRecordBytes} bytes${l.maxRecordBytesWhy ? ` (${l.maxRecordBytesWhy})` : ''}`,
          size: true,
        });
    }
    return walk;
  }

  /** `obj` is at nesting `depth` (the record is 0); `place` is where its keys are remembered. */
  private walkObject(obj: Record<string, unknown>, place: Place, depth: number, walk: Walk): void {
    const naming = place !== FREE;
    const reserved = depth === 0 ? this.limits.reservedNames : undefined;
    for (const k in obj) {
      const v = obj[k];
      if (v === null || v === undefined) continue;
      walk.chars += k.length;
      if (reserved !== undefined && Object.hasOwn(reserved, k)) {
        walk.problems.push({
          text: `key ${quote(k)} is reserved by ${this.limits.store} (${reserved[k]})`,
          rename: { at: walk.at.slice(), key: k },
        });
        continue;
      }
      let child = naming ? place.fields.get(k) : FREE;
      if (child === undefined) {
        const problem = this.nameProblem(place, k, depth === 0, walk.at);
        if (problem !== undefined) {
          walk.problems.push(problem);
          continue;
        }
        child = this.claim(place, k, undefined);
        const fold = k.toLowerCase();
        walk.added.push(() => {
          place.fields.delete(k);
          if (place.folded.get(fold) === k) place.folded.delete(fold);
        });
      }
      if (depth === 0 && this.limits.maxRowBytes !== undefined) {
        walk.rowBytes += rowBytes(v);
        walk.topValues++;
      }
      this.walkValue(v, child, depth, k, walk);
    }
  }

  /** A value held at nesting `depth` (by the key or index `key` of the container at `walk.at`). */
  private walkValue(v: unknown, place: Place, depth: number, key: string | number, walk: Walk): void {
    if (typeof v === 'string') {
      walk.chars += v.length;
      return;
    }
    if (typeof v !== 'object' || v === null) {
      walk.values++;
      return;
    }
    const list = Array.isArray(v);
    if (!list && !isPlainObject(v)) {
      walk.values++; // a Date, a DateOnly: a scalar
      return;
    }
    walk.at.push(key);
    if (depth + 1 > this.limits.maxNesting) {
      walk.problems.push({
        text: `nested more than ${this.limits.maxNesting} levels deep (at ${formatPath(pathText(walk.at))}): ${this.limits.store} holds at most ${this.limits.maxNesting} levels of objects and lists`,
      });
    } else {
      walk.values++;
      if (list) {
        const element = place === FREE ? FREE : (place.element ??= new Place());
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          if (x !== null && x !== undefined) this.walkValue(x, element, depth + 1, i, walk);
        }
      } else this.walkObject(v as Record<string, unknown>, place, depth + 1, walk);
    }
    walk.at.pop();
  }

  private nameProblem(place: Place, k: string, top: boolean, at: Path): Problem | undefined {
    const l = this.limits;
    const where = top ? '' : ` (in ${formatPath(pathText(at))})`;
    const named = (text: string): Problem => ({ text, rename: { at: at.slice(), key: k } });
    if (k === '') return named(`an empty key${where}: ${l.store} names cannot be empty`);
    if (k.includes('\0')) return named(`key ${quote(k)}${where} holds a NUL character: ${l.store} names cannot`);
    if (l.maxNameBytes !== undefined && k.length * 3 > l.maxNameBytes) {
      const bytes = Buffer.byteLength(k);
      if (bytes > l.maxNameBytes)
        return named(
          `key ${quote(k)}${where} is ${bytes} bytes: ${l.store} names hold at most ${l.maxNameBytes} bytes`,
        );
    }
    if (l.caseInsensitive) {
      const other = place.folded.get(k.toLowerCase());
      if (other !== undefined && other !== k)
        return named(`key ${quote(k)}${where} differs only in case from ${quote(other)}: ${l.store} names ignore case`);
    }
    if (top && l.maxColumns !== undefined && place.fields.size + 1 > l.maxColumns)
      return {
        text: `key ${quote(k)} would be column ${place.fields.size + 1}: ${l.store} holds at most ${l.maxColumns} columns here`,
      };
    return undefined;
  }
}

/**
 * Whether a list or object inside `container` (at nesting `level`; the record is 0) sits deeper than `max`, as the
 * judge's walk counts nesting for parsed JSON, where every object is a plain one.
 */
function nestsDeeper(container: object, level: number, max: number): boolean {
  const next = level + 1;
  if (Array.isArray(container)) {
    for (let i = 0; i < container.length; i++) {
      const x: unknown = container[i];
      if (typeof x === 'object' && x !== null && (next > max || nestsDeeper(x, next, max))) return true;
    }
    return false;
  }
  const obj = container as Record<string, unknown>;
  for (const k in obj) {
    const x = obj[k];
    if (typeof x === 'object' && x !== null && (next > max || nestsDeeper(x, next, max))) return true;
  }
  return false;
}

/** Bytes a top-level value takes in a table row: fixed-size values as stored, others at most an out-of-line pointer. */
function rowBytes(v: unknown): number {
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return 8;
  if (typeof v === 'string') return Math.min(v.length + 1, OUT_OF_LINE_BYTES);
  if (v instanceof Date) return 8;
  return OUT_OF_LINE_BYTES;
}
