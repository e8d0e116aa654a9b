/**
 * Inside the target array: finds each element's bounds (bracket depth, strings) and decodes it with `JSON.parse`,
 * the part of the array decoder that runs for every record. Apart from the walk to the array (json-array.ts), which
 * runs once per document and only tracks keys, because this is the hot loop and its state (element pieces, the
 * size limit, the one-element-per-line shortcut) has nothing to do with the path.
 */
import { COMMA, LBRACE, LBRACKET, LF, QUOTE, RBRACE, RBRACKET, isSpace } from './byte-codes.js';
import { Batcher, type DecodeContext, isRecord, jsonFailure, kindOf, Oversized, rejectRecord } from './context.js';
import { JsonTextScanner } from './json-text-scanner.js';

export abstract class ArrayElementScanner extends JsonTextScanner {
  readonly out: Batcher;
  /** Bracket depth inside the current element (0: between elements). */
  protected depth = 0;
  protected inElem = false;
  protected elemOffset = 0;
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

  constructor(ctx: DecodeContext) {
    super(ctx);
    this.out = new Batcher(ctx);
  }

  /** The array's `]` was read: the walk around the array takes over after it. */
  protected abstract arrayClosed(): void;

  /** The array's `[` was read: elements follow. */
  protected arrayOpened(): void {
    this.depth = 0;
    this.afterComma = false;
  }

  /** The line feed cache holds positions in one chunk: a new chunk starts without it. */
  protected newChunk(): void {
    this.lfChunk = null;
  }

  /** Reads elements from `i` until the array closes (returns just after its `]`) or the chunk ends (returns `n`). */
  protected items(buf: Buffer, i: number): number {
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
          this.arrayClosed();
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
}
