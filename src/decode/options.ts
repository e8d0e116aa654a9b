/** What a decoder is told besides its bytes, and the context each decoder builds from it. */
import type { DeadLetterFn } from '../core/types.js';
import { SluiceError } from '../core/errors.js';
import { withDefaultLimits, type DecodeBounds } from '../core/limits.js';
import type { DecodeContext } from './context.js';
import type { InflateBounds } from './gunzip.js';

export interface DecodeOptions {
  format: 'jsonl' | 'json' | 'csv';
  /** Unit id: named in errors and dead letters. */
  unit: string;
  deadLetter: DeadLetterFn;
  /**
   * For `json`: dotted path of the array inside the document (e.g. `reviews`, `organic`, `data.items`). Default:
   * the top-level array (a top-level object that is not an array → error, unless path given). A path whose value
   * is `null` holds zero records.
   */
  path?: string;
  /**
   * For `csv`: columns whose text is JSON written by the service (nested values): 'auto' = decode cells that start
   * with `[` or `{` and parse; or an explicit list of column names.
   */
  jsonColumns?: 'auto' | string[];
  /**
   * Records per batch. Default: up to `DEFAULT_BATCH_SIZE` records or `DEFAULT_BATCH_BYTES` of input, whichever
   * fills first; an explicit size is exact (the last batch may be shorter).
   */
  batchSize?: number;
  /** Input bytes per batch when `batchSize` is not given (default `DEFAULT_BATCH_BYTES`). */
  batchBytes?: number;
  /** Record size, unit size and inflate limits, announced records, the cancelling signal (core/limits.ts). */
  bounds?: DecodeBounds;
}

/**
 * Batches are sized by input bytes first. The records of a batch outlive V8's young-generation collections while
 * the batch goes through transforms, judge and sink, and the bigger the batch the more of them get copied and
 * promoted, to be collected again by a full collection. Through a whole pipeline (company profiles, ~3 KB each,
 * normalized, two units at once) 256 KiB batches promoted 1.3 MB per scavenge, 64 KiB ones 0.11 MB: the client's
 * CPU into Postgres fell 13% (7.3–7.7 → 6.3–6.6 s), its peak RSS from ~300 to ~200 MB, and the JSONL rows path's
 * CPU 17%; 16 and 32 KiB were no better (`npm run bench`, docs/guides/development.md). Decoding alone does not
 * show it (bench/decode.ts `--batch-bytes`: 64–512 KiB about equal; 1 MiB 1.1–1.4× the CPU). The record cap keeps
 * batches of tiny records reasonable.
 */
export const DEFAULT_BATCH_SIZE = 2000;
export const DEFAULT_BATCH_BYTES = 64 * 1024;

/** The decoders' context: batch sizes, the record size limit, and the records the unit may hold at most. */
export function decodeContext(opts: DecodeOptions): DecodeContext {
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new SluiceError(`batch size must be a positive integer, got ${batchSize}`, {
      hint: 'omit batchSize for the default, or pass a whole number of records such as 2000',
    });
  const limits = withDefaultLimits(opts.bounds?.limits);
  const announced = opts.bounds?.announcedRecords;
  const ctx: DecodeContext = {
    unit: opts.unit,
    deadLetter: opts.deadLetter,
    batchSize,
    batchBytes: opts.batchSize === undefined ? (opts.batchBytes ?? DEFAULT_BATCH_BYTES) : Infinity,
    maxRecordBytes: limits.maxRecordBytes,
    ...(announced !== undefined && {
      maxRecords: {
        limit: Math.ceil(announced.count * (1 + limits.recordsMargin)),
        announced: announced.count,
        by: announced.by,
        margin: limits.recordsMargin,
      },
    }),
  };
  return ctx;
}

/** The bounds `decompressed` applies: the unit's size and inflate ratio, and the signal that cancels it. */
export function inflateBounds(opts: DecodeOptions): InflateBounds {
  const limits = withDefaultLimits(opts.bounds?.limits);
  const signal = opts.bounds?.signal;
  return {
    maxUnitBytes: limits.maxUnitBytes,
    maxInflateRatio: limits.maxInflateRatio,
    ...(signal !== undefined && { signal }),
  };
}
