/**
 * What a CSV header decides for every row after it: the column names (blank ones named, repeats numbered), how each
 * column's cells are decoded (`json_columns`), and the function that builds a row. Apart from the parser (csv.ts)
 * because it runs once per file, while the parser's loops run for every byte; the row builder it makes is what
 * keeps the per-row work to one object literal.
 */
import { SluiceError } from '../core/errors.js';
import type { Row } from '../core/types.js';

/** How a column's cells are decoded: as text, as JSON when they look like it (`auto`), or always as JSON. */
export const TEXT = 0;
export const JSON_AUTO = 1;
export const JSON_ALWAYS = 2;

export interface CsvHeader {
  names: string[];
  /** Per column: TEXT, JSON_AUTO or JSON_ALWAYS. */
  kinds: number[];
  makeRow: (fields: unknown[]) => Row;
}

/** The header row's fields read for the rows that follow; throws when `jsonColumns` names a column it lacks. */
export function readHeader(
  fields: readonly (string | null)[],
  jsonColumns: 'auto' | string[] | undefined,
  unit: string,
): CsvHeader {
  const taken = new Set<string>();
  const names = fields.map((f, k) => {
    const name = f === null || f === '' ? `column_${k + 1}` : f;
    // Duplicate names would overwrite each other's cells: number the repeats.
    let unique = name;
    for (let n = 2; taken.has(unique); n++) unique = `${name}_${n}`;
    taken.add(unique);
    return unique;
  });
  if (Array.isArray(jsonColumns)) {
    const missing = jsonColumns.filter((c) => !names.includes(c));
    if (missing.length > 0)
      throw new SluiceError(
        `${unit}: JSON column(s) ${missing.join(', ')} not in the CSV header (${names.join(', ')})`,
        { hint: 'name columns that exist in the file, or use `auto` to decode every cell that holds JSON' },
      );
  }
  const kinds = names.map((h) =>
    jsonColumns === 'auto' ? JSON_AUTO : Array.isArray(jsonColumns) && jsonColumns.includes(h) ? JSON_ALWAYS : TEXT,
  );
  return { names, kinds, makeRow: rowFactory(names) };
}

/**
 * A function that builds a record as one object literal with the header's keys: V8 then creates every record
 * with the same shape in one step, where assigning keys one by one made the records in dictionary mode and took
 * most of the decoder's time (bench/decode.ts). Keys are JSON-quoted, so any header text is a safe key; a
 * `__proto__` column would set the prototype in a literal, so that header gets plain assignments instead.
 */
function rowFactory(header: string[]): (fields: unknown[]) => Row {
  if (header.includes('__proto__'))
    return (fields) => {
      const row: Row = {};
      for (let k = 0; k < header.length; k++)
        Object.defineProperty(row, header[k]!, {
          value: fields[k],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return row;
    };
  const body = header.map((h, k) => `${JSON.stringify(h)}: f[${k}]`).join(', ');
  // Only JSON string literals and indexes go into the code.
  return new Function('f', `return { ${body} };`) as (fields: unknown[]) => Row;
}
