/**
 * JSONL: one JSON object per line. Lines are found by scanning Buffers for the newline byte (readline measured
 * 1.75× slower) and each line is decoded from its own bytes, so a multi-byte character split across chunks is
 * never decoded in halves.
 */
import type { Batch } from '../core/types.js';
import { DecodeError } from '../core/errors.js';
import {
  Batcher,
  type DecodeContext,
  isRecord,
  jsonFailure,
  kindOf,
  Oversized,
  rejectOversized,
  rejectRecord,
} from './context.js';

const LF = 0x0a;
const CR = 0x0d;
const BOM = 0xfeff;

export async function* decodeJsonl(chunks: AsyncIterable<Buffer>, ctx: DecodeContext): AsyncGenerator<Batch> {
  const out = new Batcher(ctx);
  const max = ctx.maxRecordBytes;
  /** Pieces of a line that started in an earlier chunk. */
  let partial: Buffer[] = [];
  let partialBytes = 0;
  /** A line over the size limit being skipped to its newline: only its first bytes are kept. */
  let skipping: Oversized | null = null;
  /** Decompressed offset of the current chunk's first byte. */
  let chunkOffset = 0;
  /** Decompressed offset of the first line not yet complete. */
  let lineOffset = 0;

  const line = (buf: Buffer, start: number, end: number, offset: number): void => {
    if (end > start && buf[end - 1] === CR) end--;
    if (end === start) return;
    if (end - start > max) {
      rejectOversized(ctx, offset, end - start, 'line', buf.toString('utf8', start, Math.min(end, start + 1024)));
      return;
    }
    let text = buf.toString('utf8', start, end);
    if (offset === 0 && text.charCodeAt(0) === BOM) text = text.slice(1);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      if (text.trim() === '') return;
      rejectRecord(ctx, offset, `line is not valid JSON: ${jsonFailure(text, err)}`, text);
      return;
    }
    if (isRecord(value)) out.add(value, end - start);
    else rejectRecord(ctx, offset, `line is ${kindOf(value)}, not a JSON object`, text);
  };

  for await (const chunk of chunks) {
    let pos = 0;
    let nl = chunk.indexOf(LF);
    if (skipping !== null) {
      if (nl === -1) {
        skipping.bytes += chunk.length;
        chunkOffset += chunk.length;
        continue;
      }
      skipping.bytes += nl;
      skipping.reject(ctx, 'line');
      skipping = null;
      pos = nl + 1;
      lineOffset = chunkOffset + pos;
      nl = chunk.indexOf(LF, pos);
    } else if (partial.length > 0 && nl !== -1) {
      if (partialBytes + nl > max) {
        // Over the limit with its end in sight: judged by its length, never joined.
        new Oversized(lineOffset, partial, partialBytes + nl).reject(ctx, 'line');
      } else {
        partial.push(chunk.subarray(0, nl));
        const joined = Buffer.concat(partial);
        line(joined, 0, joined.length, lineOffset);
      }
      partial = [];
      partialBytes = 0;
      pos = nl + 1;
      lineOffset = chunkOffset + pos;
      nl = chunk.indexOf(LF, pos);
    }
    while (nl !== -1) {
      line(chunk, pos, nl, chunkOffset + pos);
      pos = nl + 1;
      nl = chunk.indexOf(LF, pos);
    }
    if (pos < chunk.length) {
      if (partial.length === 0) lineOffset = chunkOffset + pos;
      const rest = chunk.subarray(pos);
      partial.push(rest);
      partialBytes += rest.length;
      if (partialBytes > max) {
        // Past the limit without an end: from here only its length is counted, until its newline.
        skipping = new Oversized(lineOffset, partial, partialBytes);
        partial = [];
        partialBytes = 0;
      }
    }
    chunkOffset += chunk.length;
    for (const b of out.take()) yield b;
  }

  if (skipping !== null) skipping.reject(ctx, 'line', false);
  else if (partial.length > 0) lastLine(Buffer.concat(partial), lineOffset, ctx, out);
  for (const b of out.rest()) yield b;
}

/**
 * A last line without its newline is a record when it parses. When it does not, the body was most likely cut
 * mid-record: that fails the unit (to be read again) instead of quietly losing the records after the cut.
 */
function lastLine(buf: Buffer, offset: number, ctx: DecodeContext, out: Batcher): void {
  let text = buf.toString('utf8');
  if (offset === 0 && text.charCodeAt(0) === BOM) text = text.slice(1);
  if (text.trim() === '') return;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new DecodeError(
      ctx.unit,
      offset,
      `truncated input: the last JSONL line has no newline and does not parse (${jsonFailure(text, err)}); it starts`,
    );
  }
  if (isRecord(value)) out.add(value, buf.length);
  else rejectRecord(ctx, offset, `line is ${kindOf(value)}, not a JSON object`, text);
}
