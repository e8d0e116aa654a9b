/**
 * Type conflicts found while inferring a schema, collected per column path so a sink can tell the user, in one
 * readable list, which columns could only be kept by falling back to text or JSON and why.
 */
import { kindName, type LogicalType } from '../core/logical-type.js';

/** `text`: scalars of different kinds kept as VARCHAR; `json`: shapes that cannot share a type kept as JSON;
 * `case`: names that differ only in case (one column in DuckDB and Parquet, so they cannot both be stored). */
export type ConflictKind = 'text' | 'json' | 'case';

export interface SchemaConflict {
  /** Column path: `price`, `funding.rounds`, `updates[].likes_count`. */
  path: string;
  kind: ConflictKind;
  /** Kinds of value seen at the path, in the order they were first seen (for `case`: the names). */
  seen: string[];
  /** What sluice did about it, in words. */
  resolution: string;
}

const RESOLUTION: Record<ConflictKind, string> = {
  text: 'stored as VARCHAR: values that are not text are kept as their text',
  json: 'stored as JSON: every value is kept as JSON text (strings quoted); `cast` or `flatten` it to get typed columns',
  case: 'not storable in DuckDB or Parquet, whose names ignore case: rename one of them (e.g. with the `rename` transform)',
};

/** Path segments (`['updates', '[]', 'likes_count']`) → `updates[].likes_count`. */
export function formatPath(segments: readonly string[]): string {
  let out = '';
  for (const s of segments) out += s === '[]' ? '[]' : out === '' ? s : `.${s}`;
  return out === '' ? '(row)' : out;
}

export class ConflictLog {
  private readonly byPath = new Map<string, SchemaConflict>();

  /** `a` and `b` met at `path` and became `result` (VARCHAR or JSON). */
  typeConflict(path: string, a: LogicalType, b: LogicalType, result: LogicalType): void {
    const kind: ConflictKind = result.kind === 'json' ? 'json' : 'text';
    this.add(path, kind, [kindName(a), kindName(b)]);
  }

  caseConflict(path: string, names: string[]): void {
    this.add(path, 'case', names);
  }

  /** Every conflict of `other`, as if recorded here. */
  absorb(other: ConflictLog): void {
    for (const c of other.list()) this.add(c.path, c.kind, c.seen);
  }

  private add(path: string, kind: ConflictKind, seen: string[]): void {
    const key = kind === 'case' ? `case:${path}` : path;
    const prev = this.byPath.get(key);
    if (!prev) {
      this.byPath.set(key, { path, kind, seen: unique(seen), resolution: RESOLUTION[kind] });
      return;
    }
    const merged = unique([...prev.seen, ...seen]);
    // Text can still escalate to JSON when an object turns up later; JSON never goes back.
    const nextKind = prev.kind === 'json' || kind === 'json' ? (prev.kind === 'case' ? 'case' : 'json') : prev.kind;
    if (merged.length !== prev.seen.length || nextKind !== prev.kind)
      this.byPath.set(key, { path, kind: nextKind, seen: merged, resolution: RESOLUTION[nextKind] });
  }

  list(): SchemaConflict[] {
    return [...this.byPath.values()];
  }

  get size(): number {
    return this.byPath.size;
  }

  /** Names that DuckDB and Parquet cannot store side by side. */
  caseConflicts(): SchemaConflict[] {
    return this.list().filter((c) => c.kind === 'case');
  }

  /**
   * One line per conflict:
   * `- details: seen STRUCT, VARCHAR → stored as JSON: every value is kept as JSON text …`
   */
  format(only: (c: SchemaConflict) => boolean = () => true): string {
    const lines = this.list()
      .filter(only)
      .map((c) =>
        c.kind === 'case'
          ? `  - ${c.path}: fields ${c.seen.join(', ')} differ only in case → ${c.resolution}`
          : `  - ${c.path}: seen ${c.seen.join(', ')} → ${c.resolution}`,
      );
    return lines.length === 0 ? 'no schema conflicts' : `schema conflicts (${lines.length}):\n${lines.join('\n')}`;
  }
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
