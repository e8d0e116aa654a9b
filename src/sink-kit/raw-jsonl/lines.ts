/**
 * The lines of a JSONL file as the native paths read them (the jsonl sink's copy, DuckDB's staging scan, a Parquet
 * output's staged files), in one pass and in time linear in the bytes however long a line is: a line inside one
 * chunk is handed over where it lies; a line across chunks is held as its pieces and joined once, at its end (joining
 * each chunk onto the rest so far copies a long line once per chunk: quadratic, minutes for a line of 40 MB).
 *
 * A line over the record size limit is refused as soon as it would pass it, before it is held any further or parsed:
 * the engine's JS decoder dead-letters such a line unread (src/decode/carried-line.ts), and a native path may keep
 * no more than the JS path does. The refusal sends the file to that decoder, whose dead letter then says why.
 */
import { LIMIT_OPTIONS, DEFAULT_LIMITS, formatBytes } from '../../core/limits.js';
import type { RawFile } from '../../core/types.js';
import { BadJsonlLine } from './line.js';

const LF = 10;

/** A line: bytes `start`–`end` of `buf`, without its `\n`; `offset` is its first byte's offset in the input. */
export type LineFn = (buf: Buffer, start: number, end: number, offset: number) => void;

/** The record size limit a raw file is read under: its source's `limits.max_record_bytes`. */
export function maxLineBytesOf(file: RawFile): number {
  return file.decode.bounds?.limits?.maxRecordBytes ?? DEFAULT_LIMITS.maxRecordBytes;
}

export class JsonlLines {
  /** Pieces of a line that started in an earlier chunk (views of those chunks, which nothing reuses). */
  private pieces: Buffer[] = [];
  private held = 0;
  /** Offset of the held line's first byte. */
  private lineOffset = 0;
  /** Offset of the next chunk's first byte. */
  private chunkOffset = 0;

  /** `maxLineBytes`: a longer line throws `BadJsonlLine` (Infinity: none does). */
  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: LineFn,
  ) {}

  push(chunk: Buffer): void {
    let pos = 0;
    let nl = chunk.indexOf(LF);
    if (this.pieces.length > 0) {
      if (nl === -1) {
        this.hold(chunk, 0);
        this.chunkOffset += chunk.length;
        return;
      }
      const line = this.take(chunk.subarray(0, nl));
      this.onLine(line, 0, line.length, this.lineOffset);
      pos = nl + 1;
      nl = chunk.indexOf(LF, pos);
    }
    for (; nl !== -1; nl = chunk.indexOf(LF, pos)) {
      this.within(nl - pos, this.chunkOffset + pos);
      this.onLine(chunk, pos, nl, this.chunkOffset + pos);
      pos = nl + 1;
    }
    if (pos < chunk.length) this.hold(chunk, pos);
    this.chunkOffset += chunk.length;
  }

  /** At the end of the input: hands over the last line when it has no newline, and says whether it had none. */
  end(): boolean {
    if (this.pieces.length === 0) return false;
    const line = this.take(undefined);
    this.onLine(line, 0, line.length, this.lineOffset);
    return true;
  }

  private hold(chunk: Buffer, pos: number): void {
    if (this.pieces.length === 0) this.lineOffset = this.chunkOffset + pos;
    this.within(this.held + chunk.length - pos, this.lineOffset);
    this.pieces.push(chunk.subarray(pos));
    this.held += chunk.length - pos;
  }

  /** The held line, completed by `last`, joined once; nothing is held after. */
  private take(last: Buffer | undefined): Buffer {
    const bytes = this.held + (last?.length ?? 0);
    this.within(bytes, this.lineOffset);
    const pieces = last === undefined ? this.pieces : [...this.pieces, last];
    this.pieces = [];
    this.held = 0;
    return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, bytes);
  }

  private within(bytes: number, offset: number): void {
    if (bytes <= this.maxLineBytes) return;
    throw new BadJsonlLine(
      offset,
      `the line at byte ${offset} is over the record size limit of ${formatBytes(this.maxLineBytes)} ` +
        `(${LIMIT_OPTIONS.maxRecordBytes}): not read further`,
    );
  }
}
