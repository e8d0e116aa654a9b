/**
 * CSV (RFC 4180): the first row names the columns; quoted fields may hold commas, doubled quotes and line breaks.
 *
 * Why not csv-parse: its byte-at-a-time state machine measured ~30 MB/s here even without building objects
 * (4–5× the JSONL floor on company profiles, bench/decode.ts). This parser finds the structure with native
 * `indexOf` on the bytes read as latin1 (one character per byte, so indexes are byte offsets and every structural
 * character is ASCII, which never occurs inside a multi-byte UTF-8 sequence), and decodes as UTF-8 only the cells
 * that hold non-ASCII bytes. It reads the dialect the service writes: comma separator, `"` quotes, CRLF or LF
 * line ends, an optional UTF-8 BOM.
 *
 * Values:
 * - an empty unquoted cell is `null` (the service writes null that way); a quoted empty cell `""` is `''`;
 * - other cells stay strings: CSV carries no types, and guessing would turn ids like `"00123"` into numbers
 *   (use the `cast` transform to type columns);
 * - cells of `jsonColumns` hold JSON text written by the service and are decoded back: with `'auto'`, cells that
 *   start with `[` or `{` and parse (others stay text); with a list, every non-empty cell of those columns, and a
 *   cell that does not parse rejects its row.
 *
 * The header's decisions (names, JSON columns, the row builder) are in csv-header.ts, the constant-memory scan that
 * skips an over-long record in csv-record-ends.ts: this file is the per-byte parser only.
 */
import type { Batch, Row } from '../core/types.js';
import { DecodeError } from '../core/errors.js';
import { LIMIT_OPTIONS, LimitExceeded, formatBytes } from '../core/limits.js';
import { COMMA, CR, LF, QUOTE } from './byte-codes.js';
import { Batcher, batchesOf, type DecodeContext, jsonFailure, Oversized, rejectRecord } from './context.js';
import { JSON_ALWAYS, JSON_AUTO, TEXT, readHeader } from './csv-header.js';
import { RecordEnds } from './csv-record-ends.js';

export async function* decodeCsv(
  chunks: AsyncIterable<Buffer>,
  ctx: DecodeContext,
  jsonColumns: 'auto' | string[] | undefined,
): AsyncGenerator<Batch> {
  yield* batchesOf(new CsvParser(ctx, jsonColumns), chunks);
}

/** Returned by `record` when the text so far cannot tell where the record ends: wait for more input. */
const INCOMPLETE = -1;

/** Finds bytes ≥ 0x80 in latin1 text: the cells that need UTF-8 decoding. */
const NON_ASCII = /[\x80-\xff]/g;

class CsvParser {
  readonly out: Batcher;
  private header: string[] | null = null;
  private kinds: number[] = [];
  /** Builds a record from the fields, one object literal shape per header (see `readHeader` in csv-header.ts). */
  private makeRow: (fields: unknown[]) => Row = () => ({});
  /** The record's fields; reused across records. */
  private readonly fields: (string | null)[] = [];
  /** Index of a field with text after its closing quote (the row is rejected), or -1. */
  private malformedAt = -1;

  /** Bytes not yet parsed: an incomplete record carried over, then chunks waiting (see `feed`). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private carryBytes = 0;
  /** Decompressed byte offset of the first pending byte. */
  private offset = 0;
  private started = false;
  private rowNumber = 0;
  /** A record over the size limit being skipped to its end (`ends` finds it): only its first bytes are kept. */
  private skipping: Oversized | null = null;
  private readonly ends = new RecordEnds();

  /** The bytes being parsed, and the same bytes as latin1 text (`t[i]` is `bytes[i]`). */
  private bytes: Buffer = Buffer.alloc(0);
  // Positions at or after the parse position of the next comma, line feed and non-ASCII byte (`t.length`: none).
  private nextComma = -1;
  private nextLf = -1;
  private nextHigh = -1;

  constructor(
    private readonly ctx: DecodeContext,
    private readonly jsonColumns: 'auto' | string[] | undefined,
  ) {
    this.out = new Batcher(ctx);
  }

  feed(chunk: Buffer): void {
    if (this.skipping !== null) {
      const end = this.ends.scan(chunk);
      if (end === -1) {
        this.skipping.bytes += chunk.length;
        this.offset += chunk.length;
        return;
      }
      this.skipping.bytes += end;
      this.rowNumber++;
      this.skipping.reject(this.ctx, `CSV row ${this.rowNumber}`);
      this.skipping = null;
      this.offset += end;
      chunk = chunk.subarray(end);
      if (chunk.length === 0) return;
    }
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    // A record longer than a chunk would be parsed again with every chunk: wait until the new bytes are at least
    // as many as the incomplete record's, which keeps the work linear in the record's length — but no longer than
    // the record size limit: past it, one more parse either ends the record or finds it over the limit (skipped
    // from then on), so no record is held, or parsed, much beyond the limit.
    if (this.pendingBytes - this.carryBytes < this.carryBytes && this.pendingBytes <= this.ctx.maxRecordBytes) return;
    this.parse(false);
  }

  end(): void {
    if (this.skipping !== null) {
      this.rowNumber++;
      this.skipping.reject(this.ctx, `CSV row ${this.rowNumber}`, false);
      return;
    }
    this.parse(true);
  }

  private parse(final: boolean): void {
    let bytes = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    if (!this.started) {
      if (bytes.length < 3 && !final) return; // too few bytes to tell a BOM
      this.started = true;
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
        bytes = bytes.subarray(3);
        this.offset += 3;
      }
    }
    const t = bytes.toString('latin1');
    this.bytes = bytes;
    this.nextComma = -1;
    this.nextLf = -1;
    this.nextHigh = -1;
    let pos = 0;
    while (pos < t.length) {
      const end = this.record(t, pos, final);
      if (end === INCOMPLETE) break;
      this.complete(pos, end);
      pos = end;
    }
    const carry = bytes.subarray(pos);
    this.offset += pos;
    this.carryBytes = carry.length;
    this.pending = [carry];
    this.pendingBytes = carry.length;
    if (!final && carry.length > this.ctx.maxRecordBytes) this.skipFrom(carry);
  }

  /**
   * The incomplete record `carry` is already over the size limit: from here its bytes are only scanned for its
   * end. The header cannot be skipped (the records mean nothing without it): that fails the unit.
   */
  private skipFrom(carry: Buffer): void {
    if (this.header === null) throw this.headerTooLong();
    this.ends.reset();
    // The parser found no end in it, and neither can this scan (same grammar): it only learns the state at the end.
    if (this.ends.scan(carry) !== -1) return;
    this.skipping = new Oversized(this.offset, carry, carry.length);
    this.pending = [];
    this.pendingBytes = 0;
    this.carryBytes = 0;
  }

  /** Reads one record's fields into `fields`; returns where the next record starts, or INCOMPLETE. */
  private record(t: string, pos: number, final: boolean): number {
    const fields = this.fields;
    fields.length = 0;
    this.malformedAt = -1;
    const n = t.length;
    while (true) {
      if (t.charCodeAt(pos) === QUOTE) {
        let j = pos + 1;
        let doubled = false;
        let q: number;
        while (true) {
          q = t.indexOf('"', j);
          if (q === -1 || (q === n - 1 && !final)) {
            if (!final) return INCOMPLETE;
            throw new DecodeError(
              this.ctx.unit,
              this.offset + pos,
              'truncated input: a quoted CSV field is not closed; it starts',
            );
          }
          if (t.charCodeAt(q + 1) !== QUOTE) break;
          doubled = true;
          j = q + 2;
        }
        const v = this.text(t, pos + 1, q, fields.length);
        fields.push(doubled ? v.replaceAll('""', '"') : v);
        pos = q + 1;
        const c = t.charCodeAt(pos);
        if (c === COMMA) {
          pos++;
          continue;
        }
        if (c === LF) return pos + 1;
        if (c === CR) {
          if (pos + 1 >= n && !final) return INCOMPLETE;
          return t.charCodeAt(pos + 1) === LF ? pos + 2 : pos + 1;
        }
        if (pos >= n) return final ? n : INCOMPLETE;
        // Text after a closing quote: not RFC 4180. Keep it in the field so nothing is lost, reject the row.
        if (this.malformedAt === -1) this.malformedAt = fields.length - 1;
        const stop = this.delimiter(t, pos);
        if (stop === n && !final) return INCOMPLETE;
        fields[fields.length - 1] += this.text(t, pos, stop, -1);
        pos = stop;
        if (pos >= n) return n;
        if (t.charCodeAt(pos) === COMMA) {
          pos++;
          continue;
        }
        return pos + 1;
      }
      let comma = this.nextComma;
      if (comma < pos) comma = this.nextComma = indexOrEnd(t, ',', pos);
      let lf = this.nextLf;
      if (lf < pos) lf = this.nextLf = indexOrEnd(t, '\n', pos);
      if (comma < lf) {
        fields.push(comma === pos ? null : this.text(t, pos, comma, fields.length));
        pos = comma + 1;
        continue;
      }
      if (lf === n && !final) return INCOMPLETE;
      let end = lf;
      if (end > pos && t.charCodeAt(end - 1) === CR) end--;
      fields.push(end === pos ? null : this.text(t, pos, end, fields.length));
      return lf === n ? n : lf + 1;
    }
  }

  /**
   * The text of bytes `[start, end)`: decoded as UTF-8 when they hold non-ASCII bytes, else read as latin1. Cells
   * that end up in records are fresh strings: a slice of `t` would keep the whole chunk's text alive for as long
   * as any record holds the cell (a dedupe key, say). Cells about to be parsed as JSON are short-lived: slices.
   */
  private text(t: string, start: number, end: number, fieldIndex: number): string {
    let high = this.nextHigh;
    if (high < start) {
      NON_ASCII.lastIndex = start;
      high = this.nextHigh = NON_ASCII.test(t) ? NON_ASCII.lastIndex - 1 : t.length;
    }
    if (high < end) return this.bytes.toString('utf8', start, end);
    const kind = this.kinds[fieldIndex];
    const first = t.charCodeAt(start);
    const json = kind === JSON_ALWAYS || (kind === JSON_AUTO && (first === 0x5b || first === 0x7b));
    return json ? t.slice(start, end) : this.bytes.toString('latin1', start, end);
  }

  /** The next comma or line feed at or after `pos` (or the end of `t`). */
  private delimiter(t: string, pos: number): number {
    let comma = this.nextComma;
    if (comma < pos) comma = this.nextComma = indexOrEnd(t, ',', pos);
    let lf = this.nextLf;
    if (lf < pos) lf = this.nextLf = indexOrEnd(t, '\n', pos);
    return Math.min(comma, lf);
  }

  /** A record was read from bytes `[start, end)`. */
  private complete(start: number, end: number): void {
    const fields = this.fields;
    if (fields.length === 1 && fields[0] === null) return; // a blank line
    if (this.header === null) {
      if (end - start > this.ctx.maxRecordBytes) throw this.headerTooLong();
      this.setHeader(fields);
      return;
    }
    this.rowNumber++;
    if (end - start > this.ctx.maxRecordBytes) {
      // Whole, but over the limit (it came in one read): rejected by its length like the ones skipped.
      new Oversized(this.offset + start, this.bytes.subarray(start, end), end - start).reject(
        this.ctx,
        `CSV row ${this.rowNumber}`,
      );
      return;
    }
    const header = this.header;
    if (fields.length < header.length && end === this.bytes.length && !endsLine(this.bytes)) {
      // The input stops inside this row: the body was most likely cut. Failing the unit (to be read again) beats
      // rejecting the row and quietly losing the records after the cut.
      throw new DecodeError(
        this.ctx.unit,
        this.offset + start,
        `truncated input: the last CSV row has ${fields.length} of ${header.length} fields and no line end; it starts`,
      );
    }
    if (fields.length !== header.length || this.malformedAt !== -1) {
      const why =
        this.malformedAt !== -1
          ? `text after the closing quote of field ${JSON.stringify(header[this.malformedAt] ?? this.malformedAt + 1)}`
          : `${fields.length} fields where the header has ${header.length}`;
      rejectRecord(this.ctx, this.offset + start, `CSV row ${this.rowNumber}: ${why}`, this.raw(start, end));
      return;
    }
    const kinds = this.kinds;
    for (let k = 0; k < fields.length; k++) {
      const v = fields[k]!;
      const kind = kinds[k];
      if (kind === TEXT || v === null || v === '') continue;
      const c = v.charCodeAt(0);
      if (kind === JSON_AUTO && c !== 0x5b && c !== 0x7b) continue;
      try {
        fields[k] = JSON.parse(v) as string;
      } catch (err) {
        if (kind === JSON_AUTO) continue;
        rejectRecord(
          this.ctx,
          this.offset + start,
          `CSV row ${this.rowNumber}: column ${JSON.stringify(header[k])} is not valid JSON: ${jsonFailure(v, err)}`,
          this.raw(start, end),
        );
        return;
      }
    }
    const row = this.makeRow(fields);
    this.out.add(row, end - start);
  }

  private headerTooLong(): LimitExceeded {
    return new LimitExceeded(
      'maxRecordBytes',
      `${this.ctx.unit}: the CSV header is over the record size limit of ${formatBytes(this.ctx.maxRecordBytes)} (${LIMIT_OPTIONS.maxRecordBytes}); the records cannot be read without it`,
    );
  }

  private setHeader(fields: (string | null)[]): void {
    const header = readHeader(fields, this.jsonColumns, this.ctx.unit);
    this.header = header.names;
    this.kinds = header.kinds;
    this.makeRow = header.makeRow;
  }

  private raw(start: number, end: number): string {
    return this.bytes.toString('utf8', start, Math.min(end, start + 8192));
  }
}

function endsLine(bytes: Buffer): boolean {
  const last = bytes[bytes.length - 1];
  return last === LF || last === CR;
}

function indexOrEnd(t: string, s: string, from: number): number {
  const i = t.indexOf(s, from);
  return i === -1 ? t.length : i;
}
