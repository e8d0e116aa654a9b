/** The `read_json` call that reads a staged unit with explicit column types. */
import { quoteString } from '../../src/core/sql.js';
import type { StagedUnit } from './stage.js';

/**
 * DuckDB's JSON reader holds two `maximum_object_size` per reading thread (default 16 MB: 32 MB buffers, in its
 * memory limit). When the longest line is known, objects are bounded by it (with room to spare).
 */
const MIN_OBJECT_SIZE = 1 << 20;

/** `read_json(…)` over the unit's file, reading `columns` (name → DuckDB type) and dropping every other key. */
export function readStagedSql(unit: StagedUnit, columns: Iterable<[string, string]>): string {
  const specs = [...columns].map(([k, t]) => `${quoteString(k)}: ${quoteString(t)}`);
  const buffer =
    unit.longestLine === undefined
      ? ''
      : `, maximum_object_size = ${Math.max(MIN_OBJECT_SIZE, 2 * unit.longestLine + 2)}`;
  return `read_json(${quoteString(literalPath(unit.path))}, format = 'newline_delimited', compression = 'uncompressed', columns = {${specs.join(', ')}}${buffer})`;
}

/**
 * A file name DuckDB reads as that one file, never as a pattern: its readers expand `*`, `?` and `[…]` in any part
 * of a path, so a file named `*.jsonl` in a file source's folder would load every file there (the hidden ones too).
 * Each of those characters is written as a one-character class (`[*]`), which matches only itself.
 */
export function literalPath(file: string): string {
  return file.replace(/[*?[]/g, (c) => `[${c}]`);
}

/**
 * `read_json`'s refusal of a raw file's text (a failure of the native load, not of the table or the database): the
 * first line of its message, or undefined for any other error. Duplicate keys in an object, which JSON.parse reads
 * as the last, are one.
 */
export function readJsonRefusal(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const line = e.message.split('\n')[0] ?? '';
    if (/^Invalid Input Error: JSON transform error/.test(line) || /has duplicate key/.test(line))
      return `read_json refused it: ${line.replace(/^Invalid Input Error: /, '').slice(0, 300)}`;
  }
  return undefined;
}
