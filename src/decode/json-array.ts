/**
 * JSON arrays of records, streamed element by element: the top-level array, or the array at a dotted path inside a
 * document (`reviews`, `organic`, `data.items`). A byte scanner finds element boundaries (string/escape state and
 * bracket depth) and each element is decoded with `JSON.parse`: stream-json's StreamArray measured ~7× slower.
 * Arrays written one element per line skip the scan (`lineElement`): they decode at the speed of JSONL, compact
 * arrays at ~1.1–1.3× that (bench/decode.ts).
 *
 * Outside the target array the scanner only tracks what it must: the keys of the objects on the path, and the
 * depth of values it skips. The rest of the document is still scanned to its end, so a cut body is an error even
 * when the cut falls after the array.
 */
import type { Batch } from '../core/types.js';
import { DecodeError, SluiceError } from '../core/errors.js';
import { LIMIT_OPTIONS, LimitExceeded, formatBytes } from '../core/limits.js';
import { Batcher, type DecodeContext, isRecord, jsonFailure, kindOf, Oversized, rejectRecord } from './context.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const LF = 0x0a;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
/** Strings longer than this are searched with the native `indexOf` rather than byte by byte. */
const SHORT_STRING = 24;
const UTF8_BOM = [0xef, 0xbb, 0xbf];

/** Between values of the path's objects. */
const SEEK = 0;
/** Inside a value that is not on the path (depth counted, content ignored). */
const SKIP = 1;
/** Inside the target array. */
const ITEMS = 2;

/** What the innermost path object expects next. */
const KEY = 0;
const VALUE = 1;
const AFTER_VALUE = 2;

interface PathFrame {
  key: string | null;
  expect: number;
  /** Keys seen, for the "path not found" message. */
  keys: string[];
}

export async function* decodeJsonArray(
  chunks: AsyncIterable<Buffer>,
  ctx: DecodeContext,
  path: string | undefined,
): AsyncGenerator<Batch> {
  const scanner = new JsonArrayScanner(ctx, parsePath(path));
  for await (const chunk of chunks) {
    scanner.feed(chunk);
    for (const b of scanner.out.take()) yield b;
  }
  scanner.end();
  for (const b of scanner.out.rest()) yield b;
}

function parsePath(path: string | undefined): string[] {
  if (path === undefined || path === '') return [];
  const parts = path.split('.');
  if (parts.some((p) => p === ''))
    throw new SluiceError(`invalid JSON path ${JSON.stringify(path)}`, {
      hint: 'write the keys leading to the array separated by dots, e.g. `reviews` or `data.items`',
    });
  return parts;
}

class JsonArrayScanner {
  readonly out: Batcher;
  private mode = SEEK;
  /** Decompressed offset of the current chunk's first byte. */
  private offset = 0;

  // String state, shared by every mode: a string may span chunks, and so may an escape.
  private inString = false;
  private escaped = false;

  // SEEK: the path's objects entered so far (only objects on the path are ever pushed).
  private readonly frames: PathFrame[] = [];
  private rootState: 'before' | 'inside' | 'done' = 'before';
  private found = false;
  /** Bytes of a path object's key being read, when that key spans chunks. */
  private keyParts: Buffer[] | null = null;
  private keyBytes = 0;
  private anyContent = false;
  private inScalar = false;
  /** The deepest path object closed so far, for the "path not found" message. */
  private closed: { depth: number; keys: string[] } | null = null;

  // SKIP
  private skipDepth = 0;

  // ITEMS
  private depth = 0;
  private inElem = false;
  private elemOffset = 0;
  private elemParts: Buffer[] = [];
  private elemBytes = 0;
  /** The element being read is over the size limit: skipped to its end, only its length counted. */
  private oversized: Oversized | null = null;
  private afterComma = false;
  /** An element was read by `lineElement` and its `,` or `]` is still ahead. */
  private awaitingDelimiter = false;
  /** Whether elements may be read a line at a time (see `lineElement`); off after the first line that fails. */
  private lines = true;
  /** The next line feed in `lfChunk` at or after the scan position, or -1 for none. */
  private nextLf = -1;
  private lfChunk: Buffer | null = null;

  constructor(
    private readonly ctx: DecodeContext,
    private readonly path: string[],
  ) {
    this.out = new Batcher(ctx);
  }

  feed(buf: Buffer): void {
    const n = buf.length;
    let i = 0;
    this.lfChunk = null;
    // Each mode first finishes a string left open by the previous chunk.
    while (i < n) {
      if (this.mode === ITEMS) i = this.items(buf, i);
      else if (this.mode === SKIP) i = this.skip(buf, i);
      else i = this.seek(buf, i);
    }
    this.offset += n;
  }

  /** At the end of the input: anything left open means the body was cut. */
  end(): void {
    const at = this.offset;
    if (this.mode === ITEMS) {
      if (this.inElem)
        throw new DecodeError(
          this.ctx.unit,
          this.elemOffset,
          'truncated input: the JSON array ends inside an element starting',
        );
      throw new DecodeError(this.ctx.unit, at, 'truncated input: the JSON array is not closed; input ends');
    }
    if (!this.anyContent) return; // an empty body is zero records
    if (this.inString || this.mode === SKIP || this.rootState !== 'done')
      throw new DecodeError(this.ctx.unit, at, 'truncated input: the JSON document is not complete; input ends');
    if (!this.found) throw this.pathNotFound();
  }

  /** From just after an opening quote (or inside a string) to just after its closing quote, or `n`. */
  private string(buf: Buffer, i: number): number {
    const n = buf.length;
    if (this.escaped) {
      this.escaped = false;
      i++;
    }
    // Short strings (most keys and values) are cheaper to walk than to hand to a native search.
    const shortEnd = Math.min(n, i + SHORT_STRING);
    for (; i < shortEnd; i++) {
      const c = buf[i];
      if (c === QUOTE) {
        this.inString = false;
        return i + 1;
      }
      if (c === BACKSLASH) i++;
    }
    if (i > n) {
      // A backslash was the chunk's last byte: the next chunk starts with the escaped byte.
      this.escaped = true;
      this.inString = true;
      return n;
    }
    while (true) {
      const q = buf.indexOf(QUOTE, i);
      const stop = q === -1 ? n : q;
      // An odd run of backslashes before the quote (or the chunk's end) escapes it.
      let k = stop - 1;
      while (k >= i && buf[k] === BACKSLASH) k--;
      const escapedStop = (stop - 1 - k) % 2 === 1;
      if (q === -1) {
        this.escaped = escapedStop;
        this.inString = true;
        return n;
      }
      if (!escapedStop) {
        this.inString = false;
        return q + 1;
      }
      i = q + 1;
    }
  }

  private items(buf: Buffer, i: number): number {
    const n = buf.length;
    let depth = this.depth;
    let begin = this.inElem ? 0 : -1;
    if (this.inString) i = this.string(buf, i);
    while (i < n) {
      const c = buf[i]!;
      if (c === QUOTE) {
        if (depth === 0 && begin < 0) begin = this.startElem(i);
        i = this.string(buf, i + 1);
        continue;
      }
      if (depth > 0) {
        if (c === LBRACE || c === LBRACKET) depth++;
        else if (c === RBRACE || c === RBRACKET) depth--;
      } else if (c === COMMA || c === RBRACKET) {
        if (this.awaitingDelimiter) {
          this.awaitingDelimiter = false;
          this.afterComma = c === COMMA;
        } else this.endElem(buf, begin, i, c);
        begin = -1;
        if (c === RBRACKET) {
          this.depth = 0;
          this.mode = SEEK;
          if (this.frames.length === 0) this.rootState = 'done';
          return i + 1;
        }
      } else if (c === LBRACE || c === LBRACKET) {
        if (begin < 0) {
          if (this.lines) {
            const next = this.lineElement(buf, i);
            if (next !== -1) {
              i = next;
              continue;
            }
          }
          begin = this.startElem(i);
        }
        depth++;
      } else if (begin < 0 && !isSpace(c)) {
        // A scalar (or stray byte) where an element belongs: it becomes an element, rejected when parsed.
        begin = this.startElem(i);
      }
      i++;
    }
    if (begin >= 0) this.elemPiece(buf.subarray(begin));
    this.depth = depth;
    return n;
  }

  /** A piece of an element that continues in the next chunk: kept, unless the element is over the size limit. */
  private elemPiece(piece: Buffer): void {
    if (this.oversized !== null) {
      this.oversized.bytes += piece.length;
      return;
    }
    this.elemParts.push(piece);
    this.elemBytes += piece.length;
    if (this.elemBytes > this.ctx.maxRecordBytes) {
      this.oversized = new Oversized(this.elemOffset, this.elemParts, this.elemBytes);
      this.elemParts = [];
      this.elemBytes = 0;
    }
  }

  /**
   * Arrays written one element per line (`[\n{…},\n{…}\n]`, as the emulator and many exporters write them) need no
   * scanning: the element is the line, less its `,`. A guess that is wrong cannot parse (a proper prefix of an
   * object is not JSON, and JSON.parse rejects anything after the value), so a line that parses is exactly one
   * element; the first line that does not turns this off and the scanner takes over from the same byte.
   * Returns where scanning resumes, or -1 when the element must be scanned.
   */
  private lineElement(buf: Buffer, i: number): number {
    let nl = this.nextLf;
    if (this.lfChunk !== buf || (nl !== -1 && nl < i)) {
      // Remembered per chunk: a chunk without line ends must not be searched again for every element.
      nl = this.nextLf = buf.indexOf(LF, i);
      this.lfChunk = buf;
    }
    if (nl === -1) return -1;
    let end = nl;
    while (end > i && isSpace(buf[end - 1]!)) end--;
    const comma = buf[end - 1] === COMMA;
    if (comma) {
      end--;
      while (end > i && isSpace(buf[end - 1]!)) end--;
    }
    // Over the size limit: scanned, so that its end is found by the structure rather than guessed from a line.
    if (end - i > this.ctx.maxRecordBytes) return -1;
    let value: unknown;
    try {
      value = JSON.parse(buf.toString('utf8', i, end));
    } catch {
      this.lines = false;
      return -1;
    }
    if (isRecord(value)) this.out.add(value, end - i);
    else
      rejectRecord(
        this.ctx,
        this.offset + i,
        `array element is ${kindOf(value)}, not a JSON object`,
        buf.toString('utf8', i, end),
      );
    this.afterComma = comma;
    this.awaitingDelimiter = !comma;
    return comma ? nl + 1 : end;
  }

  private startElem(i: number): number {
    this.awaitingDelimiter = false;
    this.inElem = true;
    this.elemOffset = this.offset + i;
    return i;
  }

  private endElem(buf: Buffer, begin: number, end: number, delimiter: number): void {
    if (!this.inElem) {
      if (delimiter === COMMA || this.afterComma)
        rejectRecord(this.ctx, this.offset + end, 'empty array element (a stray comma)', '');
      this.afterComma = delimiter === COMMA;
      return;
    }
    this.afterComma = delimiter === COMMA;
    this.inElem = false;
    const max = this.ctx.maxRecordBytes;
    if (this.oversized !== null) {
      this.oversized.bytes += end;
      this.oversized.reject(this.ctx, 'array element');
      this.oversized = null;
      return;
    }
    const size = this.elemParts.length > 0 ? this.elemBytes + end : end - begin;
    if (size > max) {
      // Judged by its length, never joined or parsed.
      const first = this.elemParts.length > 0 ? this.elemParts : [buf.subarray(begin, end)];
      new Oversized(this.elemOffset, first, size).reject(this.ctx, 'array element');
      this.elemParts = [];
      this.elemBytes = 0;
      return;
    }
    let text: string;
    if (this.elemParts.length > 0) {
      this.elemParts.push(buf.subarray(0, end));
      text = Buffer.concat(this.elemParts).toString('utf8');
      this.elemParts = [];
      this.elemBytes = 0;
    } else {
      text = buf.toString('utf8', begin, end);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      rejectRecord(this.ctx, this.elemOffset, `array element is not valid JSON: ${jsonFailure(text, err)}`, text);
      return;
    }
    if (isRecord(value)) this.out.add(value, text.length);
    else rejectRecord(this.ctx, this.elemOffset, `array element is ${kindOf(value)}, not a JSON object`, text);
  }

  private skip(buf: Buffer, i: number): number {
    const n = buf.length;
    let depth = this.skipDepth;
    if (this.inString) i = this.string(buf, i);
    while (i < n) {
      const c = buf[i];
      if (c === QUOTE) {
        i = this.string(buf, i + 1);
        continue;
      }
      if (c === LBRACE || c === LBRACKET) depth++;
      else if (c === RBRACE || c === RBRACKET) {
        depth--;
        if (depth === 0) {
          this.skipDepth = 0;
          this.mode = SEEK;
          return i + 1;
        }
      }
      i++;
    }
    this.skipDepth = depth;
    return n;
  }

  /** Walks the objects on the path: their keys, and the start of each value. */
  private seek(buf: Buffer, i: number): number {
    const n = buf.length;
    if (this.inString) {
      const capturing = this.keyParts !== null;
      const start = i;
      i = this.string(buf, i);
      if (capturing) this.keyPiece(buf, start, i);
    }
    if (this.inScalar) i = this.scalar(buf, i);
    while (i < n) {
      const c = buf[i]!;
      if (isSpace(c) || (this.offset + i < 3 && c === UTF8_BOM[this.offset + i])) {
        i++;
        continue;
      }
      this.anyContent = true;
      if (this.rootState === 'done')
        throw new DecodeError(this.ctx.unit, this.offset + i, 'malformed JSON: unexpected content after the document');
      const top = this.frames[this.frames.length - 1];
      if (top !== undefined && top.expect !== VALUE) {
        if (c === QUOTE && top.expect === KEY) {
          top.expect = VALUE;
          const start = i + 1;
          i = this.string(buf, start);
          this.keyParts = [];
          this.keyPiece(buf, start, i);
          continue;
        }
        if (c === COMMA && top.expect === AFTER_VALUE) top.expect = KEY;
        else if (c === RBRACE) this.closeFrame();
        else throw this.malformed(i, c);
        i++;
        continue;
      }
      if (c === COLON && top !== undefined) {
        i++;
        continue;
      }
      if (c === COMMA || c === COLON || c === RBRACE || c === RBRACKET) throw this.malformed(i, c);
      // A value starts here.
      this.value(c, i);
      if (c === QUOTE) {
        i = this.string(buf, i + 1);
        continue;
      }
      i++;
      if (c === LBRACE || c === LBRACKET) {
        if (this.mode !== SEEK) return i;
        continue;
      }
      i = this.scalar(buf, i);
    }
    return n;
  }

  /** Scalars need no scanning (their bytes cannot change the structure): skip to the next delimiter. */
  private scalar(buf: Buffer, i: number): number {
    const n = buf.length;
    while (i < n && !isDelimiter(buf[i]!)) i++;
    this.inScalar = i === n;
    return i;
  }

  /** A piece of a path object's key, from `start` to `end` (just after the closing quote, or the chunk end). */
  private keyPiece(buf: Buffer, start: number, end: number): void {
    const parts = this.keyParts!;
    if (this.inString) {
      parts.push(buf.subarray(start, end));
      this.keyBytes += end - start;
      if (this.keyBytes > this.ctx.maxRecordBytes) throw this.keyTooLong();
      return;
    }
    this.keyBytes = 0;
    parts.push(buf.subarray(start, end - 1));
    this.keyParts = null;
    const raw = Buffer.concat(parts).toString('utf8');
    const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    const top = this.frames[this.frames.length - 1]!;
    top.key = key;
    if (top.keys.length < 50) top.keys.push(key);
  }

  private closeFrame(): void {
    const frame = this.frames.pop()!;
    const depth = this.frames.length;
    if (this.closed === null || depth >= this.closed.depth) this.closed = { depth, keys: frame.keys };
    if (this.frames.length === 0) this.rootState = 'done';
  }

  /** A value begins with byte `c`: the target array, an object on the way to it, or something to skip. */
  private value(c: number, i: number): void {
    const depth = this.frames.length;
    if (depth === 0) {
      this.rootState = 'inside';
      if (this.path.length === 0) return this.target(c, i);
      if (c === LBRACE) return this.enter();
      if (!startsValue(c)) throw this.malformed(i, c);
      throw this.notAnObject(0, c);
    }
    const top = this.frames[depth - 1]!;
    top.expect = AFTER_VALUE;
    if (!this.found && top.key === this.path[depth - 1]) {
      if (depth === this.path.length) return this.target(c, i);
      if (c === LBRACE) return this.enter();
      throw this.notAnObject(depth, c);
    }
    if (c === LBRACE || c === LBRACKET) {
      this.mode = SKIP;
      this.skipDepth = 1;
    }
  }

  private enter(): void {
    this.frames.push({ key: null, expect: KEY, keys: [] });
  }

  private target(c: number, i: number): void {
    this.found = true;
    if (c === LBRACKET) {
      this.mode = ITEMS;
      this.depth = 0;
      this.afterComma = false;
      return;
    }
    // The service writes null for absent values: an absent array holds no records.
    if (c === 0x6e /* n */) {
      if (this.frames.length === 0) this.rootState = 'done';
      return;
    }
    if (!startsValue(c)) throw this.malformed(i, c);
    const where = this.path.length === 0 ? 'the JSON document' : `\`${this.path.join('.')}\``;
    throw new SluiceError(
      `${this.ctx.unit}: ${where} is ${describe(c)}, not an array of records (at byte ${this.offset + i})`,
      {
        hint:
          this.path.length === 0
            ? 'set the path to the array inside the document (e.g. `reviews`, `organic`, `data.items`)'
            : 'point the path at an array of records',
      },
    );
  }

  private notAnObject(depth: number, c: number): SluiceError {
    const where = depth === 0 ? 'the JSON document' : `\`${this.path.slice(0, depth).join('.')}\``;
    return new SluiceError(
      `${this.ctx.unit}: path \`${this.path.join('.')}\` not found: ${where} is ${describe(c)}, not an object`,
      { hint: 'check the path against the document: keys separated by dots, each naming an object member' },
    );
  }

  private pathNotFound(): SluiceError {
    const { depth, keys } = this.closed ?? { depth: 0, keys: [] };
    const where = depth === 0 ? 'the document' : `\`${this.path.slice(0, depth).join('.')}\``;
    const seen = keys.length > 0 ? `; its keys: ${keys.join(', ')}` : '';
    return new SluiceError(
      `${this.ctx.unit}: path \`${this.path.join('.')}\` not found in the JSON document (${where} has no \`${this.path[depth]}\`${seen})`,
      { hint: 'set the path to the key that holds the array of records' },
    );
  }

  /**
   * A key of an object on the way to the array, longer than a record may be. It cannot be skipped like a record:
   * whether the array lies under it is only known once it is read whole. No real answer has such keys.
   */
  private keyTooLong(): LimitExceeded {
    return new LimitExceeded(
      'maxRecordBytes',
      `${this.ctx.unit}: a key of the JSON document is over the record size limit of ${formatBytes(this.ctx.maxRecordBytes)} (${LIMIT_OPTIONS.maxRecordBytes}) at byte ${this.offset}; the document cannot be read past it`,
    );
  }

  private malformed(i: number, c: number): DecodeError {
    return new DecodeError(
      this.ctx.unit,
      this.offset + i,
      `malformed JSON: unexpected ${JSON.stringify(String.fromCharCode(c))}`,
    );
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDelimiter(c: number): boolean {
  return c === COMMA || c === RBRACE || c === RBRACKET || isSpace(c);
}

/** Whether byte `c` can begin a JSON value. */
function startsValue(c: number): boolean {
  return (
    c === LBRACE ||
    c === LBRACKET ||
    c === QUOTE ||
    c === 0x74 /* t */ ||
    c === 0x66 /* f */ ||
    c === 0x6e /* n */ ||
    c === 0x2d /* - */ ||
    (c >= 0x30 && c <= 0x39)
  );
}

function describe(c: number): string {
  if (c === LBRACE) return 'an object';
  if (c === LBRACKET) return 'an array';
  if (c === QUOTE) return 'a string';
  if (c === 0x74 || c === 0x66) return 'a boolean';
  if (c === 0x6e) return 'null';
  return 'a number';
}
