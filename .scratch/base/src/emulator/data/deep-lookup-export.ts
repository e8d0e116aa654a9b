/**
 * The bytes of a deep-lookup download. The service documents neither layout (docs/service.md §4.3), so the emulator
 * picks the shape `GET /request/{id}` already shows: `json` is one JSON array of flat row objects; `csv` is a header
 * line of the column names in the request's column order, then one line per row (`\n` line ends, RFC 4180 quoting,
 * empty field for null, `true`/`false` for booleans). Both are produced in pieces of a few hundred rows, so a large
 * export streams instead of being built in memory.
 */
import type { LookupRow } from './deep-lookup.js';

const ROWS_PER_CHUNK = 256;

export function* jsonExport(rows: Iterable<LookupRow>): Generator<Buffer> {
  let first = true;
  let piece: string[] = [];
  for (const row of rows) {
    piece.push(JSON.stringify(row));
    if (piece.length === ROWS_PER_CHUNK) {
      yield Buffer.from(`${first ? '[\n' : ',\n'}${piece.join(',\n')}`);
      first = false;
      piece = [];
    }
  }
  if (piece.length) yield Buffer.from(`${first ? '[\n' : ',\n'}${piece.join(',\n')}`);
  else if (first) {
    yield Buffer.from('[]\n');
    return;
  }
  yield Buffer.from('\n]\n');
}

export function* csvExport(columns: readonly string[], rows: Iterable<LookupRow>): Generator<Buffer> {
  let piece: string[] = [columns.map(csvField).join(',')];
  for (const row of rows) {
    piece.push(columns.map((c) => csvField(row[c])).join(','));
    if (piece.length >= ROWS_PER_CHUNK) {
      yield Buffer.from(`${piece.join('\n')}\n`);
      piece = [];
    }
  }
  if (piece.length) yield Buffer.from(`${piece.join('\n')}\n`);
}

export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
