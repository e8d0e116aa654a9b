/**
 * Bytes → batches of records, for every format the service downloads in. gzip is sniffed by its magic bytes; the
 * decoders are pull-based (nothing is read before the consumer asks for the next batch), so memory stays flat
 * however large the input, and an error of the input itself (the client's `NetworkError`) reaches the caller unchanged.
 * Every decoder works under the unit's bounds (core/limits.ts): records over the size limit are dead-lettered unread,
 * and the unit fails past its size, inflate ratio or announced records, or when its signal aborts.
 */
import type { Batch } from '../core/types.js';
import { SluiceError } from '../core/errors.js';
import { decodeCsv } from './csv.js';
import { decompressed } from './gunzip.js';
import { decodeJsonArray } from './json-array.js';
import { decodeJsonl } from './jsonl.js';
import { decodeContext, inflateBounds, type DecodeOptions } from './options.js';

export { checkedBytes } from './checked-bytes.js';
export { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_SIZE, type DecodeOptions } from './options.js';

export function decode(bytes: AsyncIterable<Uint8Array>, opts: DecodeOptions): AsyncIterable<Batch> {
  const ctx = decodeContext(opts);
  const chunks = decompressed(bytes, opts.unit, inflateBounds(opts));
  switch (opts.format) {
    case 'jsonl':
      return decodeJsonl(chunks, ctx);
    case 'json':
      return decodeJsonArray(chunks, ctx, opts.path);
    case 'csv':
      return decodeCsv(chunks, ctx, opts.jsonColumns);
    default:
      throw new SluiceError(`unknown decode format ${JSON.stringify(opts.format)}`, { hint: 'use jsonl, json or csv' });
  }
}
