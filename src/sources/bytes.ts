/**
 * What sources hand the decoders besides a download's bytes: the bytes counted into the run's counters, and the
 * bounds the unit is read under (core/limits.ts) — the pipeline's limits, the records the service announced for
 * the unit, and the unit's signal (its deadline, an interrupt's spent grace), which cancels the read wherever it is.
 */
import { failpoint } from '../core/failpoints.js';
import { DEFAULT_LIMITS, type DecodeBounds } from '../core/limits.js';
import type { Counters, SourceContext } from '../core/types.js';

/** Counts bytes as they arrive (compressed, as on the wire) into the run's counters. */
export async function* countBytes(body: AsyncIterable<Uint8Array>, counters: Counters): AsyncIterable<Uint8Array> {
  let received = 0;
  for await (const chunk of body) {
    counters.bytes += chunk.byteLength;
    received += chunk.byteLength;
    failpoint('download:body', received);
    yield chunk;
  }
}

/**
 * Bounds for a download from the service: every limit applies. `announced`: the most records the service said the
 * unit holds, and who said so (e.g. a snapshot part's `batch_size`); the unit fails past it plus the margin.
 */
export function downloadBounds(ctx: SourceContext, announced?: { count: number; by: string }): DecodeBounds {
  const l = ctx.limits ?? DEFAULT_LIMITS;
  return {
    limits: {
      maxRecordBytes: l.maxRecordBytes,
      maxUnitBytes: l.maxUnitBytes,
      maxInflateRatio: l.maxInflateRatio,
      recordsMargin: l.recordsMargin,
    },
    ...(announced !== undefined && { announcedRecords: announced }),
    signal: ctx.signal,
  };
}

/**
 * Bounds for the user's own local files: a record still may not exceed the size limit (that is memory), but a
 * large or highly compressible file is the user's to load, not an answer to distrust.
 */
export function localFileBounds(ctx: SourceContext): DecodeBounds {
  return {
    limits: {
      maxRecordBytes: (ctx.limits ?? DEFAULT_LIMITS).maxRecordBytes,
      maxUnitBytes: Infinity,
      maxInflateRatio: Infinity,
    },
    signal: ctx.signal,
  };
}
