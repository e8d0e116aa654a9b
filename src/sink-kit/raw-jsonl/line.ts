/**
 * One line of a raw JSONL file as the native paths check it: it must be one JSON object, or blank (skipped, as
 * DuckDB's reader skips it), and a record the sink's store can hold (the engine's record judge, `RecordCheck`). A
 * line that is not makes the native path refuse the whole file; the engine then decodes it in JS, which sends that
 * record to the dead letters, so a native path never keeps less than the JS one, nor a record the JS path refuses.
 */
import { isUtf8 } from 'node:buffer';
import type { RecordCheck, Row } from '../../core/types.js';

/** A line of a raw JSONL file that is not one JSON object; `offset` is its byte offset in the decompressed bytes. */
export class BadJsonlLine extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
    this.name = 'BadJsonlLine';
  }
}

/**
 * The object on bytes `start`–`end` of `buf` (a line without its `\n`), or undefined for a blank line. A line that
 * is not UTF-8 is refused: JSON.parse would read its bytes with replacement characters, as the JS path does, while
 * the native readers refuse it (DuckDB's) or would pass the bytes on as they are (a copy).
 */
export function parseObjectLine(buf: Buffer, start: number, end: number, offset: number): Row | undefined {
  if (!isUtf8(buf.subarray(start, end))) throw new BadJsonlLine(offset, `the line at byte ${offset} is not UTF-8`);
  const text = buf.toString('utf8', start, end);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    if (text.trim() === '') return undefined;
    throw new BadJsonlLine(offset, `not JSON at byte ${offset}: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new BadJsonlLine(offset, `line at byte ${offset} is not a JSON object`);
  return v as Row;
}

/** `parseObjectLine`, then the record judged: a record the store cannot hold is a `BadJsonlLine` too. */
export function checkedObjectLine(
  buf: Buffer,
  start: number,
  end: number,
  offset: number,
  check: RecordCheck | undefined,
): Row | undefined {
  const row = parseObjectLine(buf, start, end, offset);
  if (row === undefined || check === undefined) return row;
  const refusal = check.refusalOfLine ? check.refusalOfLine(row, end - start) : check.refusal(row);
  if (refusal !== undefined) throw new BadJsonlLine(offset, `the record at byte ${offset}: ${refusal}`);
  return row;
}
