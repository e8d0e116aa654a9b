/**
 * JSON arrays of records, streamed element by element: the top-level array, or the array at a dotted path inside a
 * document (`reviews`, `organic`, `data.items`). A byte scanner finds element boundaries (string/escape state and
 * bracket depth) and each element is decoded with `JSON.parse`: stream-json's StreamArray measured ~7× slower.
 * Arrays written one element per line skip the scan (`lineElement`): they decode at the speed of JSONL, compact
 * arrays at ~1.1–1.3× that (bench/decode.ts).
 *
 * This file is the walk to the array and past it; the elements are read by json-array-elements.ts, strings by
 * json-text-scanner.ts, and the messages for a path that leads nowhere are in json-path.ts. Outside the target array
 * the scanner only tracks what it must: the keys of the objects on the path, and the depth of values it skips. The
 * rest of the document is still scanned to its end, so a cut body is an error even when the cut falls after the
 * array.
 */
import type { Batch } from '../core/types.js';
import { DecodeError } from '../core/errors.js';
import {
  COLON,
  COMMA,
  LBRACE,
  LBRACKET,
  QUOTE,
  RBRACE,
  RBRACKET,
  isDelimiter,
  isSpace,
  startsValue,
} from './byte-codes.js';
import { batchesOf, type DecodeContext } from './context.js';
import { ArrayElementScanner } from './json-array-elements.js';
import { keyTooLong, malformedAt, notAnArray, notAnObject, parsePath, pathNotFound } from './json-path.js';

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
  // Inside the generator, as before the split: a bad path fails the first read, not the call.
  yield* batchesOf(new JsonArrayScanner(ctx, parsePath(path)), chunks);
}

class JsonArrayScanner extends ArrayElementScanner {
  private mode = SEEK;

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

  constructor(
    ctx: DecodeContext,
    private readonly path: string[],
  ) {
    super(ctx);
  }

  feed(buf: Buffer): void {
    const n = buf.length;
    let i = 0;
    this.newChunk();
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
    if (!this.found) throw pathNotFound(this.ctx, this.path, this.closed);
  }

  protected arrayClosed(): void {
    this.mode = SEEK;
    if (this.frames.length === 0) this.rootState = 'done';
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
        else throw malformedAt(this.ctx, this.offset + i, c);
        i++;
        continue;
      }
      if (c === COLON && top !== undefined) {
        i++;
        continue;
      }
      if (c === COMMA || c === COLON || c === RBRACE || c === RBRACKET) throw malformedAt(this.ctx, this.offset + i, c);
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
      if (this.keyBytes > this.ctx.maxRecordBytes) throw keyTooLong(this.ctx, this.offset);
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
      if (!startsValue(c)) throw malformedAt(this.ctx, this.offset + i, c);
      throw notAnObject(this.ctx, this.path, 0, c);
    }
    const top = this.frames[depth - 1]!;
    top.expect = AFTER_VALUE;
    if (!this.found && top.key === this.path[depth - 1]) {
      if (depth === this.path.length) return this.target(c, i);
      if (c === LBRACE) return this.enter();
      throw notAnObject(this.ctx, this.path, depth, c);
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
      this.arrayOpened();
      return;
    }
    // The service writes null for absent values: an absent array holds no records.
    if (c === 0x6e /* n */) {
      if (this.frames.length === 0) this.rootState = 'done';
      return;
    }
    throw notAnArray(this.ctx, this.path, c, this.offset + i);
  }
}
