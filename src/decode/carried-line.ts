/**
 * A line that began in an earlier chunk: its pieces while it is under the record size limit, only its length once
 * it is over (it is then dead-lettered by its length, never joined). Both line readers need exactly this — the JSONL
 * decoder, which parses lines, and the fast path's line checker (checked-bytes.ts), which passes them on as bytes —
 * and both must agree on when a line is too long and where it started, so it is written once. It runs once per
 * chunk, never per line: the readers' loops over the lines inside a chunk stay their own.
 */
import { Oversized, type DecodeContext } from './context.js';

export class CarriedLine {
  private pieces: Buffer[] = [];
  private bytes = 0;
  /** The line is over the limit: from here only its length is counted, until its line feed. */
  private skipping: Oversized | null = null;
  /** Decompressed offset of the carried line's first byte. */
  offset = 0;

  /** `copy`: keep copies of the pieces, for a reader whose chunks may be views of buffers their producer reuses. */
  constructor(
    private readonly ctx: DecodeContext,
    private readonly copy: boolean,
  ) {}

  /** Whether a line is carried: the next line feed ends it. */
  get open(): boolean {
    return this.skipping !== null || this.pieces.length > 0;
  }

  /** `chunk` holds no line feed from `pos` on: the line goes on in the next chunk. `at`: the offset of `chunk[pos]`. */
  hold(chunk: Buffer, pos: number, at: number): void {
    if (this.skipping !== null) {
      this.skipping.bytes += chunk.length - pos;
      return;
    }
    if (this.pieces.length === 0) this.offset = at;
    const rest = this.copy ? Buffer.from(chunk.subarray(pos)) : chunk.subarray(pos);
    this.pieces.push(rest);
    this.bytes += rest.length;
    if (this.bytes > this.ctx.maxRecordBytes) {
      this.skipping = new Oversized(this.offset, this.pieces, this.bytes);
      this.pieces = [];
      this.bytes = 0;
    }
  }

  /**
   * The carried line ends before the chunk's line feed at `nl`: its earlier pieces (the chunk's first `nl` bytes
   * complete it), or undefined when it is over the limit and was dead-lettered.
   */
  close(nl: number): Buffer[] | undefined {
    const { pieces, skipping } = this;
    const bytes = (skipping?.bytes ?? this.bytes) + nl;
    this.pieces = [];
    this.bytes = 0;
    this.skipping = null;
    if (skipping !== null) {
      skipping.bytes = bytes;
      skipping.reject(this.ctx, 'line');
      return undefined;
    }
    if (bytes > this.ctx.maxRecordBytes) {
      new Oversized(this.offset, pieces, bytes).reject(this.ctx, 'line');
      return undefined;
    }
    return pieces;
  }

  /**
   * At the end of the input: the pieces of a last line without its line feed (none: empty), or undefined when that
   * line is over the limit (dead-lettered as cut by the input's end).
   */
  end(): Buffer[] | undefined {
    const { pieces, skipping } = this;
    this.pieces = [];
    this.bytes = 0;
    this.skipping = null;
    if (skipping === null) return pieces;
    skipping.reject(this.ctx, 'line', false);
    return undefined;
  }
}

/** The last byte of a line held in pieces (undefined for none). */
export function lastByte(pieces: readonly Buffer[]): number | undefined {
  const last = pieces[pieces.length - 1];
  return last?.[last.length - 1];
}

/** The length of a line held in pieces. */
export function piecesLength(pieces: readonly Buffer[]): number {
  let n = 0;
  for (const p of pieces) n += p.length;
  return n;
}
