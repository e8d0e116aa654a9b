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
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { RecordCheck, Row, StoreLimits, UnstorablePolicy } from '../core/types.js';
import { formatPath } from './conflicts.js';
import type { LogicalType } from '../core/logical-type.js';

/** The `on_unstorable` option of every sink. */
export const onUnstorableOption = z
  .enum(['dead_letter', 'repair'])
  .optional()
  .describe(
    'A record the store cannot hold as it is (a key it cannot name — empty, NUL, too long, reserved, differing only in case from another —, nesting too deep, too large, too many columns, a partition value that cannot be a directory): `dead_letter` (default) sends it to the dead letters with the reason and its position; `repair` renames such keys (`<key>_<hash>`) and cuts over-long text, and logs what it changed (nesting, columns and partition values cannot be repaired: those records are dead-lettered).',
  );

/** The policy a sink's config chose (`on_unstorable`); absent: `dead_letter`. */
export function unstorablePolicy(config: Readonly<Record<string, unknown>> | undefined): UnstorablePolicy {
  return config?.on_unstorable === 'repair' ? 'repair' : 'dead_letter';
}

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

type Path = (string | number)[];

interface Problem {
  /** The reason, without the record's position (the caller adds it). */
  text: string;
  /** A name to rename: where its object sits, and the key. */
  rename?: { at: Path; key: string };
  /** The record is larger than the store reads (repaired by cutting text). */
  size?: boolean;
}

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

export class RecordJudge implements RecordCheck {
  private readonly root: Place;
  private readonly topNames: boolean;

  constructor(
    readonly limits: StoreLimits,
    private readonly policy: UnstorablePolicy = 'dead_letter',
  ) {
    this.topNames = limits.names !== 'none';
    this.root = this.topNames ? new Place() : FREE;
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

  judge(row: Row): Verdict {
    const walk = this.walk(row);
    if (walk.problems.length === 0) return { row };
    for (const undo of walk.added.reverse()) undo();
    const reason = describe(walk.problems);
    if (this.policy !== 'repair' || walk.problems.some((p) => !p.rename && !p.size)) return { refused: reason };
    const repairs: string[] = [];
    const copy = this.repaired(row, walk.problems, repairs);
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
    if (l.partitions) this.checkPartitions(row, l.partitions, walk);
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

  private checkPartitions(row: Row, p: NonNullable<StoreLimits['partitions']>, walk: Walk): void {
    let pathBytes = 0;
    for (const column of p.columns) {
      const v = row[column];
      if (v === null || v === undefined) continue;
      const what =
        typeof v === 'string'
          ? `partition value ${quote(v)} of ${quote(column)}`
          : `partition value of ${quote(column)}`;
      if (typeof v === 'object' && (Array.isArray(v) || isPlainObject(v))) {
        walk.problems.push({
          text: `the partition value of ${quote(column)} is ${Array.isArray(v) ? 'a list' : 'an object'}: a partition directory takes a single value`,
        });
        continue;
      }
      const text = typeof v === 'string' ? v : String(v instanceof Date ? v.toISOString() : v);
      if (typeof v === 'string' && (/^null$/i.test(v) || v === HIVE_NULL)) {
        walk.problems.push({ text: `${what}: a reader takes the directory ${quote(`${column}=${v}`)} for null` });
        continue;
      }
      const bytes = Buffer.byteLength(column) + 1 + escapedBytes(text);
      pathBytes += bytes + 1;
      if (bytes > p.maxSegmentBytes)
        walk.problems.push({
          text: `${what}: its directory name would be ${bytes} bytes, over the ${p.maxSegmentBytes} a file name may have`,
        });
    }
    if (pathBytes > p.maxPathBytes)
      walk.problems.push({
        text: `partition directories of ${pathBytes} bytes, over the ${p.maxPathBytes} the output's paths leave them`,
      });
  }

  /** A copy of `row` with its names renamed and, if too large, its longest texts cut. */
  private repaired(row: Row, problems: Problem[], repairs: string[]): Row {
    const copy = copyContainers(row) as Row;
    for (const p of problems) {
      if (!p.rename) continue;
      const obj = resolve(copy, p.rename.at);
      if (obj === undefined) continue;
      const to = this.newName(p.rename.key, obj);
      renameKey(obj, p.rename.key, to);
      repairs.push(`key ${quote(p.rename.key)} renamed to ${quote(to)} (${p.text})`);
    }
    if (problems.some((p) => p.size)) cutTexts(copy, this.limits.maxRecordBytes, repairs);
    return copy;
  }

  /** `<key>_<8 hex of its hash>`, NULs as `_`, shortened to the store's longest name; not a key `obj` has. */
  private newName(key: string, obj: Record<string, unknown>): string {
    const max = this.limits.maxNameBytes;
    const hex = max === undefined ? 8 : Math.max(1, Math.min(8, max - 1));
    for (let salt = 0; ; salt++) {
      const suffix = `_${createHash('sha256').update(`${salt}:${key}`).digest('hex').slice(0, hex)}`;
      let base = key.replace(/\0/g, '_');
      if (max !== undefined)
        while (base.length > 0 && Buffer.byteLength(base + suffix) > max) base = dropLastChar(base);
      const name = base + suffix;
      if (!Object.hasOwn(obj, name)) return name;
    }
  }
}

const HIVE_NULL = '__HIVE_DEFAULT_PARTITION__';

function describe(problems: readonly Problem[]): string {
  const shown = problems.slice(0, 3).map((p) => p.text);
  return problems.length > 3 ? `${shown.join('; ')}; and ${problems.length - 3} more` : shown.join('; ');
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 60)}…` : s);
}

/** `['items', 3, 'sku']` → `['items', '[]', 'sku']` for formatPath. */
function pathText(at: Path): string[] {
  return at.map((s) => (typeof s === 'number' ? '[]' : s));
}

/** Bytes a top-level value takes in a table row: fixed-size values as stored, others at most an out-of-line pointer. */
function rowBytes(v: unknown): number {
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return 8;
  if (typeof v === 'string') return Math.min(v.length + 1, OUT_OF_LINE_BYTES);
  if (v instanceof Date) return 8;
  return OUT_OF_LINE_BYTES;
}

/** UTF-8 bytes of `s` as a hive partition directory escapes it: all but `A-Za-z0-9-._~` as `%XX` per byte. */
export function escapedBytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += /[A-Za-z0-9\-._~]/.test(s[i]!) ? 1 : 3;
    else if (c < 0x800) n += 6;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 12;
      i++;
    } else n += 9;
  }
  return n;
}

function jsonBytes(row: Row): number {
  try {
    const text = JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    return Buffer.byteLength(text);
  } catch (err) {
    if (err instanceof RangeError) return Infinity; // longer than a JS string can be
    throw err;
  }
}

function copyContainers(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copyContainers);
  if (typeof v === 'object' && v !== null && isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const k in v) out[k] = copyContainers((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

function resolve(row: Row, at: Path): Record<string, unknown> | undefined {
  let node: unknown = row;
  for (const s of at) node = (node as Record<string | number, unknown> | undefined)?.[s];
  return typeof node === 'object' && node !== null && !Array.isArray(node)
    ? (node as Record<string, unknown>)
    : undefined;
}

/** Renames `from` to `to` in place, keeping the keys' order. */
function renameKey(obj: Record<string, unknown>, from: string, to: string): void {
  const entries = Object.entries(obj);
  for (const k of Object.keys(obj)) delete obj[k];
  for (const [k, v] of entries) obj[k === from ? to : k] = v;
}

function dropLastChar(s: string): string {
  const last = s.charCodeAt(s.length - 1);
  return s.slice(0, last >= 0xdc00 && last <= 0xdfff ? -2 : -1);
}

/** Cuts the record's longest texts until its JSON fits `max` bytes; each cut is told in `repairs`. */
function cutTexts(row: Row, max: number, repairs: string[]): void {
  const texts: { holder: Record<string | number, unknown>; key: string | number; path: Path }[] = [];
  const collect = (v: unknown, path: Path): void => {
    if (Array.isArray(v))
      v.forEach((x, i) =>
        typeof x === 'string'
          ? texts.push({ holder: v as never, key: i, path: [...path, i] })
          : collect(x, [...path, i]),
      );
    else if (typeof v === 'object' && v !== null && isPlainObject(v))
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (typeof x === 'string') texts.push({ holder: v as Record<string, unknown>, key: k, path: [...path, k] });
        else collect(x, [...path, k]);
      }
  };
  collect(row, []);
  const cut = new Map<(typeof texts)[number], number>();
  for (let round = 0; round < 20; round++) {
    const bytes = jsonBytes(row);
    if (bytes <= max) break;
    const longest = texts.reduce<(typeof texts)[number] | undefined>(
      (a, t) => (a === undefined || (t.holder[t.key] as string).length > (a.holder[a.key] as string).length ? t : a),
      undefined,
    );
    if (longest === undefined) break;
    const s = longest.holder[longest.key] as string;
    if (!cut.has(longest)) cut.set(longest, s.length);
    const keep = Math.max(0, Math.floor(s.length - (bytes - max) * 1.05 - 16));
    const kept = s.slice(0, keep);
    const last = kept.charCodeAt(kept.length - 1);
    // Not half a surrogate pair.
    longest.holder[longest.key] = last >= 0xd800 && last <= 0xdbff ? kept.slice(0, -1) : kept;
  }
  for (const [t, was] of cut)
    repairs.push(
      `text at ${formatPath(pathText(t.path))} cut from ${was} to ${(t.holder[t.key] as string).length} characters (the record was over ${max} bytes as JSON)`,
    );
}
