/**
 * Uploaded filter-value files (spec "Uploaded file format"): a CSV whose header is the filter's field name and
 * whose following lines hold one value each, or a JSON array of objects holding the value under the field name.
 * For `field:subfield` names the header (or key) may be the whole name or just the field before the colon.
 * Problems are the spec's `Invalid file format`, with what exactly is wrong after a colon.
 */
import { parse } from 'csv-parse/sync';
import type { Scalar } from './filter-validate.js';

export interface UploadedFile {
  name: string;
  text: string;
}

export type FileValues = { values: Scalar[] } | { error: string };

/** File names look like this; a value that does (and names no upload) is a missing file, not a literal. */
export const FILE_NAME = /\.(csv|json)$/i;

export function fileValues(file: UploadedFile, fieldName: string): FileValues {
  const accepted = acceptedKeys(fieldName);
  const expected = accepted.map((k) => `"${k}"`).join(' or ');
  if (/\.json$/i.test(file.name)) return jsonValues(file, accepted, expected);
  return csvValues(file, accepted, expected);
}

function acceptedKeys(fieldName: string): string[] {
  const colon = fieldName.indexOf(':');
  return colon < 0 ? [fieldName] : [fieldName, fieldName.slice(0, colon)];
}

function csvValues(file: UploadedFile, accepted: string[], expected: string): FileValues {
  let rows: string[][];
  try {
    rows = parse(file.text, { bom: true, skip_empty_lines: true, trim: true, relax_column_count: true });
  } catch (err) {
    return invalid(`${file.name} is not valid CSV (${(err as Error).message})`);
  }
  const header = rows[0];
  if (!header) return invalid(`${file.name} is empty; its first line must be the header ${expected}`);
  if (header.length !== 1 || !accepted.includes(header[0] as string))
    return invalid(`the header of ${file.name} is "${header.join(',')}"; it must be ${expected}, one column`);
  const values: Scalar[] = [];
  for (let i = 1; i < rows.length; i++) {
    const row = rows[i] as string[];
    if (row.length !== 1) return invalid(`line ${i + 1} of ${file.name} has ${row.length} columns; one value per line`);
    values.push(row[0] as string);
  }
  return { values };
}

function jsonValues(file: UploadedFile, accepted: string[], expected: string): FileValues {
  let data: unknown;
  try {
    data = JSON.parse(file.text.replace(/^\uFEFF/, ''));
  } catch {
    return invalid(`${file.name} is not valid JSON`);
  }
  if (!Array.isArray(data)) return invalid(`${file.name} must be a JSON array of objects`);
  const values: Scalar[] = [];
  for (let i = 0; i < data.length; i++) {
    const item: unknown = data[i];
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      return invalid(`item ${i} of ${file.name} is not an object; the file must be a JSON array of objects`);
    const key = accepted.find((k) => Object.hasOwn(item, k));
    if (key === undefined) return invalid(`item ${i} of ${file.name} has no key ${expected}`);
    const v = (item as Record<string, unknown>)[key];
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)))
      values.push(v);
    else if (v !== null)
      return invalid(`item ${i} of ${file.name}: the value of "${key}" must be a string, number or boolean`);
  }
  return { values };
}

function invalid(why: string): FileValues {
  return { error: `Invalid file format: ${why}` };
}
