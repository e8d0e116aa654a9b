/**
 * Rows → COPY's text format, serialised here rather than by a driver: one line per row, values tab-separated,
 * `\N` for null, backslash, newline, carriage return and tab escaped. Each column is encoded for the table's type
 * of the column (which holds the unit's values: the table was evolved to fit them first), so a unit written while
 * another process widened a column still sends text the column accepts.
 */
import type { Row } from '../../src/core/types.js';
import { DateOnly } from '../../src/core/values.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { pgType } from './types.js';

/** A value Postgres cannot store: text and jsonb refuse the NUL character. */
export class UnstorableValue extends Error {}

type Encoder = (v: unknown) => string;

/** What a text field must not hold as it is: COPY's specials, and the NUL Postgres refuses (one scan for both). */
const SPECIAL = /[\\\n\r\t\0]/;

/** COPY text escaping of one field. */
function esc(s: string): string {
  if (!SPECIAL.test(s)) return s;
  if (s.includes('\0')) throw new UnstorableValue('a text value holds the NUL character, which Postgres cannot store');
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
      return jsonText(v);
    default:
      return undefined;
  }
}

function scalar(v: unknown): string {
  const t = scalarText(v);
  return t === undefined ? '\\N' : esc(t);
}

/** JSON text of `v`; bigints (which JSON.stringify refuses) as numbers when exact, else as strings. */
function jsonText(v: unknown): string | undefined {
  try {
    // Without a replacer: V8's serializer is several times faster than with one, and bigints are rare.
    return JSON.stringify(v);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return JSON.stringify(v, bigintAsNumber);
  }
}

function jsonb(v: unknown): string {
  const t = jsonText(v);
  if (t === undefined) return '\\N';
  // JSON text has no raw control characters (JSON.stringify escapes them): only its backslashes need COPY's escape,
  // and a NUL can only be there escaped.
  if (!t.includes('\\')) return t;
  if (t.includes('\\u0000')) throw new UnstorableValue('a JSON value holds the NUL character, which jsonb refuses');
  return t.replaceAll('\\', '\\\\');
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

/** Text columns: strings as they are (escaped); anything else as its text. */
function text(v: unknown): string {
  return typeof v === 'string' ? esc(v) : scalar(v);
}

/** Numeric columns: a JS number's text never needs escaping. */
function numeric(v: unknown): string {
  return typeof v === 'number' ? String(v) : scalar(v);
}

/** timestamptz columns: an ISO instant never needs escaping. */
function instant(v: unknown): string {
  if (!(v instanceof Date)) return scalar(v);
  return Number.isNaN(v.getTime()) ? '\\N' : v.toISOString();
}

function encoderFor(t: LogicalType): Encoder {
  const sql = pgType(t);
  if (sql === 'jsonb' || sql === 'json') return jsonb;
  if (sql.endsWith('[]')) return array;
  if (sql === 'text') return text;
  if (sql === 'bigint' || sql === 'double precision') return numeric;
  if (sql === 'timestamptz') return instant;
  return scalar;
}

/**
 * COPY text being built, as bytes: each value is written as soon as it is encoded. Joining values into row
 * strings made one more copy of every row for V8 to allocate (and collect, while the unit's batches are alive),
 * and joining rows into chunks made it flatten deep string trees before encoding them. `take()` hands the bytes
 * over without copying them and starts a new buffer, so a chunk on its way to the server is never overwritten.
 */
export class CopyBuffer {
  private buf: Buffer;
  private off = 0;

  /** `capacity`: bytes of each new buffer, enough for a chunk plus the row that crosses its end. */
  constructor(private readonly capacity = 1 << 19) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  get length(): number {
    return this.off;
  }

  text(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair: 4 bytes for 2 units).
    const max = s.length * 3;
    if (this.off + max > this.buf.length) this.grow(max);
    this.off += this.buf.write(s, this.off);
  }

  byte(b: number): void {
    if (this.off >= this.buf.length) this.grow(1);
    this.buf[this.off++] = b;
  }

  /** Forgets what was written after `length` (a row that could not be encoded to its end). */
  rewind(length: number): void {
    this.off = length;
  }

  /** The bytes written; the next ones go to a new buffer. */
  take(): Buffer {
    const out = this.buf.subarray(0, this.off);
    this.buf = Buffer.allocUnsafe(this.capacity);
    this.off = 0;
    return out;
  }

  private grow(n: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.off + n));
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }
}

const TAB = 9;
const NEWLINE = 10;
const BACKSLASH = 92;
const N = 78;

/** Encodes rows for `COPY … (columns) FROM STDIN`, columns typed as `types` gives them. */
export class RowEncoder {
  private readonly keys: string[];
  private readonly encoders: Encoder[];

  constructor(columns: readonly string[], types: ReadonlyMap<string, LogicalType>) {
    this.keys = [...columns];
    this.encoders = this.keys.map((k) => encoderFor(types.get(k)!));
  }

  /** Appends one line, newline included. Throws `UnstorableValue` for a row Postgres cannot hold (writing nothing). */
  write(row: Row, out: CopyBuffer): void {
    const start = out.length;
    const { keys, encoders } = this;
    try {
      for (let i = 0; i < keys.length; i++) {
        if (i > 0) out.byte(TAB);
        const v = row[keys[i]!];
        if (v === null || v === undefined) {
          out.byte(BACKSLASH);
          out.byte(N);
        } else out.text(encoders[i]!(v));
      }
    } catch (err) {
      out.rewind(start);
      throw err;
    }
    out.byte(NEWLINE);
  }

  /** One line as text, newline included. */
  line(row: Row): string {
    const out = new CopyBuffer(1024);
    this.write(row, out);
    return out.take().toString();
  }
}
