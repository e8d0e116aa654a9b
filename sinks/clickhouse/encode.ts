/**
 * Rows → ClickHouse's TabSeparated input, serialised here: one line per row, values tab-separated, `\N` for null,
 * backslash, tab, newline, carriage return and NUL escaped; arrays as `[…]` literals whose text elements are quoted
 * ('…', the same escapes and `\'`). TabSeparated rather than JSONEachRow: ClickHouse parses it several times faster,
 * and 18.16's JSONEachRow cannot read a JSON object into a String column, nor `true` into UInt8.
 *
 * Each column is encoded for the staging table's type of the column (types.ts: what the text of a String column
 * means is in its comment), so a timestamp always reaches the table as ISO 8601 UTC text with milliseconds, whatever
 * form the source wrote it in, and a nested record as JSON text.
 */
import type { Row } from '../../src/core/types.js';
import { DateOnly, parseIsoTimestamp } from '../../src/core/values.js';
import type { ColumnType } from './types.js';

type Encoder = (v: unknown) => string;

const FIELD_SPECIAL = /[\\\t\n\r\0]/;
const FIELD_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' };
const QUOTED_SPECIAL = /[\\'\t\n\r\0]/g;
const QUOTED_ESCAPES: Record<string, string> = { ...FIELD_ESCAPES, "'": "\\'" };

/** A TabSeparated field's text escaped. */
function field(s: string): string {
  return FIELD_SPECIAL.test(s) ? s.replace(/[\\\t\n\r\0]/g, (c) => FIELD_ESCAPES[c]!) : s;
}

/** A quoted string inside an array literal. */
function quoted(s: string): string {
  return `'${s.replace(QUOTED_SPECIAL, (c) => QUOTED_ESCAPES[c]!)}'`;
}

function bigintAsNumber(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v;
}

/** JSON text of `v`; bigints (which JSON.stringify refuses) as numbers when exact, else as strings. */
export function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return JSON.stringify(v, bigintAsNumber) ?? 'null';
  }
}

/** Any value as text: what a String column holds of it. */
function plainText(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
    case 'bigint':
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    default:
      if (v instanceof Date) return v.toISOString();
      if (v instanceof DateOnly) return v.iso;
      return jsonText(v);
  }
}

function instantText(v: unknown): string {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? '' : v.toISOString();
  if (v instanceof DateOnly) return `${v.iso}T00:00:00.000Z`;
  const d = parseIsoTimestamp(v);
  return d === null ? plainText(v) : d.toISOString();
}

function dayText(v: unknown): string {
  if (v instanceof DateOnly) return v.iso;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? '' : v.toISOString().slice(0, 10);
  return DateOnly.parse(v)?.iso ?? plainText(v);
}

function integerText(v: unknown): string {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? String(v) : BigInt(Math.trunc(v)).toString();
  if (typeof v === 'boolean') return v ? '1' : '0';
  return plainText(v);
}

function booleanText(v: unknown): string {
  return typeof v === 'boolean' ? (v ? '1' : '0') : plainText(v);
}

/**
 * A JSON column's field: JSON text has no raw tab, newline, carriage return or NUL (JSON.stringify escapes them), so
 * only its backslashes need TabSeparated's escape — one `includes` instead of the field's regex, on the values that
 * cost most (nested records).
 */
function jsonField(v: unknown): string {
  const t = jsonText(v);
  return t.includes('\\') ? t.replaceAll('\\', '\\\\') : t;
}

/** How the text of a scalar column of `type` (bare, not Nullable) meaning `comment` is written. */
function scalarText(type: string, comment: string): Encoder {
  if (comment === 'sluice:TIMESTAMP' || comment === 'sluice:LIST<TIMESTAMP>') return instantText;
  if (comment === 'sluice:DATE' || comment === 'sluice:LIST<DATE>') return dayText;
  if (comment === 'sluice:JSON') return jsonText;
  if (comment === 'sluice:BOOLEAN' || comment === 'sluice:LIST<BOOLEAN>') return booleanText;
  if (/^U?Int\d+$/.test(type)) return integerText;
  return plainText;
}

/** The default a column that cannot be null takes for a null (a merge key: ClickHouse's own default). */
function defaultText(type: string): string {
  return /^(U?Int|Float)\d+$/.test(type) ? '0' : '';
}

/** Encoders of one column, `\N` (or the default) for null. */
function encoderFor(c: ColumnType): Encoder {
  const nullable = c.type.startsWith('Nullable(');
  const bare = nullable ? c.type.slice('Nullable('.length, -1) : c.type;
  const array = /^Array\((?:Nullable\()?(.+?)\)?\)$/.exec(bare);
  if (array) {
    const inner = array[1]!;
    const text = scalarText(inner, c.comment);
    const element = inner === 'String' ? (v: unknown) => quoted(text(v)) : text;
    return (v) => {
      if (v === null || v === undefined) return '[]';
      const list = Array.isArray(v) ? v : [v];
      let out = '[';
      for (let i = 0; i < list.length; i++) {
        const x = list[i];
        out += (i === 0 ? '' : ',') + (x === null || x === undefined ? 'NULL' : element(x));
      }
      return `${out}]`;
    };
  }
  const absent = nullable ? '\\N' : defaultText(bare);
  if (c.comment === 'sluice:JSON') return (v) => (v === null || v === undefined ? absent : jsonField(v));
  const text = scalarText(bare, c.comment);
  return (v) => (v === null || v === undefined ? absent : field(text(v)));
}

/** Encodes rows for `INSERT INTO … (columns) FORMAT TabSeparated`, columns typed as `types` gives them. */
export class RowEncoder {
  private readonly keys: string[];
  private readonly encoders: Encoder[];

  /** `extra`: a value the encoder appends to every row after the columns (the merge version), given its ordinal. */
  constructor(
    columns: readonly string[],
    types: ReadonlyMap<string, ColumnType>,
    private readonly extra?: (ordinal: number) => string,
  ) {
    this.keys = [...columns];
    this.encoders = this.keys.map((k) => encoderFor(types.get(k)!));
  }

  /** The batch's lines; `ordinal` is the unit's row number of the batch's first row. */
  batch(rows: readonly Row[], ordinal: number): string {
    const { keys, encoders, extra } = this;
    let out = '';
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r]!;
      for (let i = 0; i < keys.length; i++) {
        if (i > 0) out += '\t';
        out += encoders[i]!(row[keys[i]!]);
      }
      if (extra) out += `${keys.length > 0 ? '\t' : ''}${extra(ordinal + r)}`;
      out += '\n';
    }
    return out;
  }
}
