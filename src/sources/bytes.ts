/** Counts bytes as they arrive (compressed, as on the wire) into the run's counters. */
import type { Counters } from '../core/types.js';

export async function* countBytes(body: AsyncIterable<Uint8Array>, counters: Counters): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    counters.bytes += chunk.byteLength;
    yield chunk;
  }
}
