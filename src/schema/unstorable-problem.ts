/**
 * A reason a store cannot hold a record, as the judge (storable.ts) finds it and the repairs (storable-repair.ts)
 * act on it, and the few ways they word and measure records. Shared by both, and by the partition checks
 * (partition-values.ts), so a reason reads the same whichever check found it.
 */
import type { Row } from '../core/types.js';

/** Keys and list indexes from the record down to a value. */
export type Path = (string | number)[];

export interface Problem {
  /** The reason, without the record's position (the caller adds it). */
  text: string;
  /** A name to rename: where its object sits, and the key. */
  rename?: { at: Path; key: string };
  /** The record is larger than the store reads (repaired by cutting text). */
  size?: boolean;
}

/** The first three reasons, and how many more. */
export function describeProblems(problems: readonly Problem[]): string {
  const shown = problems.slice(0, 3).map((p) => p.text);
  return problems.length > 3 ? `${shown.join('; ')}; and ${problems.length - 3} more` : shown.join('; ');
}

/** An object literal's, or `Object.create(null)`'s: a record's object, where a Date or a DateOnly is a scalar. */
export function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A key or value for a reason: JSON-quoted, cut when long. */
export function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 60)}…` : s);
}

/** `['items', 3, 'sku']` → `['items', '[]', 'sku']` for formatPath. */
export function pathText(at: Path): string[] {
  return at.map((s) => (typeof s === 'number' ? '[]' : s));
}

/** The record's size as JSON text, in bytes; Infinity when it is longer than a JS string can be. */
export function jsonBytes(row: Row): number {
  try {
    const text = JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    return Buffer.byteLength(text);
  } catch (err) {
    if (err instanceof RangeError) return Infinity; // longer than a JS string can be
    throw err;
  }
}
