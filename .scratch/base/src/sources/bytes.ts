/** Counts bytes as they arrive (compressed, as on the wire) into the run's counters. */
import { failpoint } from '../core/failpoints.js';
import type { Counters } from '../core/types.js';

export async function* countBytes(body: AsyncIterable<Uint8Array>, counters: Counters): AsyncIterable<Uint8Array> {
  let received = 0;
  for await (const chunk of body) {
    counters.bytes += chunk.byteLength;
    received += chunk.byteLength;
    failpoint('download:body', received);
    yield chunk;
  }
}
