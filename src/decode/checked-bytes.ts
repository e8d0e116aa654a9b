/**
 * A download on its way to disk for a sink's native reader (the fast path): decompressed under the unit's bounds,
 * and for JSONL, split into lines without parsing them (the sink parses every line anyway). Lines over the record
 * size limit are dead-lettered and left out of the file, so no native reader ever meets one; lines are counted
 * against the records the source announced. What reaches the file is plain bytes, which the sinks read in place.
 */
import { decompressed } from './gunzip.js';
import { CR, LF } from './byte-codes.js';
import { CarriedLine, lastByte, piecesLength } from './carried-line.js';
import { Oversized, tooManyRecords, type DecodeContext } from './context.js';
import { decodeContext, inflateBounds, type DecodeOptions } from './options.js';

/** The download's bytes as the file should hold them: decompressed, bounded, JSONL lines checked. */
export function checkedBytes(bytes: AsyncIterable<Uint8Array>, opts: DecodeOptions): AsyncIterable<Buffer> {
  const chunks = decompressed(bytes, opts.unit, inflateBounds(opts));
  return opts.format === 'jsonl' ? checkedLines(chunks, decodeContext(opts)) : chunks;
}

async function* checkedLines(chunks: AsyncIterable<Buffer>, ctx: DecodeContext): AsyncGenerator<Buffer> {
  const max = ctx.maxRecordBytes;
  const limit = ctx.maxRecords?.limit ?? Infinity;
  let records = 0;
  // Copied: the chunk may be a view of a buffer its producer reuses, and a carried line outlives its chunk.
  const carried = new CarriedLine(ctx, true);
  /** Decompressed offset of the current chunk's first byte. */
  let chunkOffset = 0;

  const counted = (bytes: number, lastByte: number | undefined): void => {
    // Blank lines are no records (the sinks skip them); a lone CR is a blank line written on Windows.
    if (bytes === 0 || (bytes === 1 && lastByte === CR)) return;
    if (++records > limit) throw tooManyRecords(ctx);
  };

  for await (const chunk of chunks) {
    let pos = 0;
    let nl = chunk.indexOf(LF);
    if (nl !== -1 && carried.open) {
      // The line from earlier chunks ends here.
      const earlier = carried.close(nl);
      if (earlier !== undefined) {
        counted(piecesLength(earlier) + nl, nl > 0 ? chunk[nl - 1] : lastByte(earlier));
        for (const p of earlier) yield p;
        yield chunk.subarray(0, nl + 1);
      }
      pos = nl + 1;
      nl = chunk.indexOf(LF, pos);
    }
    // Whole lines of this chunk go out as runs of bytes: only an over-long one splits a run.
    let run = pos;
    for (; nl !== -1; nl = chunk.indexOf(LF, pos)) {
      const bytes = nl - pos;
      if (bytes > max) {
        if (run < pos) yield chunk.subarray(run, pos);
        new Oversized(chunkOffset + pos, chunk.subarray(pos, nl), bytes).reject(ctx, 'line');
        run = nl + 1;
      } else counted(bytes, chunk[nl - 1]);
      pos = nl + 1;
    }
    if (run < pos) yield chunk.subarray(run, pos);
    if (pos < chunk.length) carried.hold(chunk, pos, chunkOffset + pos);
    chunkOffset += chunk.length;
  }
  const last = carried.end();
  if (last !== undefined && last.length > 0) {
    // A last line without its newline: the sinks read it as a record (or refuse it) like any other.
    counted(piecesLength(last), lastByte(last));
    for (const p of last) yield p;
  }
}
