/**
 * Where a CSV record ends, found with constant memory: for records too large to hold, which the parser (csv.ts)
 * skips to their end and dead-letters by their length. Apart from the parser because it reads bytes, not latin1
 * text, and keeps one state across chunks; it must follow the parser's grammar, which is all the two share.
 */
import { COMMA, LF, QUOTE } from './byte-codes.js';

/** The scanner's states: at a field's first byte, inside an unquoted field, inside quotes, just after a quote. */
const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
const QUOTE_SEEN = 3;

/**
 * The line feed that is not inside quotes. Quotes open a field only at its start, a doubled quote inside quotes is
 * a quote, text after a closing quote runs to the next delimiter. (A lone CR after a closing quote, which the parser
 * also takes as a record's end, is not: such a record is skipped to the next line feed.)
 */
export class RecordEnds {
  private state = FIELD_START;

  reset(): void {
    this.state = FIELD_START;
  }

  /** The index just after the record's line feed in `buf`, or -1 when the record goes on past it. */
  scan(buf: Buffer): number {
    const n = buf.length;
    let i = 0;
    while (i < n) {
      if (this.state === QUOTED) {
        const q = buf.indexOf(QUOTE, i);
        if (q === -1) return -1;
        this.state = QUOTE_SEEN;
        i = q + 1;
        continue;
      }
      const c = buf[i]!;
      if (this.state === QUOTE_SEEN && c === QUOTE) {
        this.state = QUOTED;
      } else if (this.state === FIELD_START && c === QUOTE) {
        this.state = QUOTED;
      } else if (c === COMMA) {
        this.state = FIELD_START;
      } else if (c === LF) {
        this.state = FIELD_START;
        return i + 1;
      } else {
        this.state = UNQUOTED;
      }
      i++;
    }
    return -1;
  }
}
