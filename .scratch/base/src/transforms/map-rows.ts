/** The shape most generic transforms share: each row maps to one row or to none, batch by batch. */
import type { Batch, Row, Transform, TransformContext } from '../core/types.js';

/** `fn` returns the output row, or null to drop the row (it has dead-lettered it if that was an error). */
export function mapRows(fn: (row: Row, ctx: TransformContext) => Row | null): Transform {
  return async function* (batches: AsyncIterable<Batch>, ctx: TransformContext): AsyncIterable<Batch> {
    for await (const batch of batches) {
      const out: Row[] = [];
      for (const row of batch) {
        const r = fn(row, ctx);
        if (r !== null) out.push(r);
      }
      if (out.length > 0) yield out;
    }
  };
}
