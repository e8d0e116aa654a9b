/**
 * Rows → COPY's text format, serialised here rather than by a driver: one line per row, values tab-separated,
 * `\N` for null, backslash, newline, carriage return and tab escaped. Each column is encoded for the table's type
 * of the column (which holds the unit's values: the table was evolved to fit them first), so a unit written while
 * another process widened a column still sends text the column accepts.
 */
import type { Row } from '../../src/core/types.js';
import { DateOnly } from '../../src/core/values.js';
import type { LogicalType } from '../../src/schema/logical-type.js';
import { pgType } from './types.js';

/** A value Postgres cannot store: text and jsonb refuse the NUL character. */
export class UnstorableValue extends Error {}

type Encoder = (v: unknown) => string;

const NEEDS_ESCAPE = /[\\\n\r\t]/;

/** COPY text escaping of one field. */
function esc(s: string): string {
  if (s.includes('\0')) throw new UnstorableValue('a text value holds the NUL character, which Postgres cannot store');
  if (!NEEDS_ESCAPE.test(s)) return s;
  return s.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'));
}

function bigintAsNumber(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v;
}

/** A value as text Postgres casts to the column's type; undefined: null. */
function scalarText(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
    case 'bigint':
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString();
      if (v instanceof DateOnly) return v.iso;
      return JSON.stringify(v, bigintAsNumber);
    default:
      return undefined;
  }
}

function scalar(v: unknown): string {
  const t = scalarText(v);
  return t === undefined ? '\\N' : esc(t);
}

function jsonb(v: unknown): string {
  const t = JSON.stringify(v, bigintAsNumber);
  if (t === undefined) return '\\N';
  if (t.includes('\\u0000')) throw new UnstorableValue('a JSON value holds the NUL character, which jsonb refuses');
  return esc(t);
}

/** An array literal element: quoted, with `"` and `\` escaped inside the quotes. */
function element(v: unknown): string {
  const t = v === null || v === undefined ? undefined : scalarText(v);
  return t === undefined ? 'NULL' : `"${t.replace(/[\\"]/g, '\\$&')}"`;
}

function array(v: unknown): string {
  if (!Array.isArray(v)) return scalar(v);
  let out = '{';
  for (let i = 0; i < v.length; i++) out += (i === 0 ? '' : ',') + element(v[i]);
  return esc(`${out}}`);
}

function encoderFor(t: LogicalType): Encoder {
  const sql = pgType(t);
  if (sql === 'jsonb' || sql === 'json') return jsonb;
  if (sql.endsWith('[]')) return array;
  return scalar;
}

/** Encodes rows for `COPY … (columns) FROM STDIN`, columns typed as `types` gives them. */
export class RowEncoder {
  private readonly keys: string[];
  private readonly encoders: Encoder[];

  constructor(columns: readonly string[], types: ReadonlyMap<string, LogicalType>) {
    this.keys = [...columns];
    this.encoders = this.keys.map((k) => encoderFor(types.get(k)!));
  }

  /** One line, newline included. Throws `UnstorableValue` for a row Postgres cannot hold. */
  line(row: Row): string {
    let out = '';
    const n = this.keys.length;
    for (let i = 0; i < n; i++) {
      const v = row[this.keys[i]!];
      out += (v === null || v === undefined ? '\\N' : this.encoders[i]!(v)) + (i === n - 1 ? '\n' : '\t');
    }
    return out;
  }
}
