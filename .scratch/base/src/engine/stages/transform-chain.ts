/** A unit's batches through the pipeline's transforms, each transform's dead letters marked with where it was. */
import type { Batch, Counters, DeadLetter, Logger, Transform, TransformContext, WorkUnit } from '../../core/types.js';

export interface BuiltTransform {
  type: string;
  fn: Transform;
}

/** What a transform's dead letter carries beyond the letter itself (read back by dead-letter replay). */
export type TransformLetter = DeadLetter & { step: number; index: number; unit_params: Record<string, unknown> };

export interface TransformChainOptions {
  transforms: readonly BuiltTransform[];
  log: Logger;
  deadLetter: (d: TransformLetter) => void;
  counters: Counters;
  /** Index of the first transform the unit goes through (replay: a transform's letters re-enter at that transform). */
  first?: number;
}

/** The records leaving the chain are the records of the run (`counters.records`). */
export function transformed(
  u: WorkUnit,
  batches: AsyncIterable<Batch>,
  opts: TransformChainOptions,
): AsyncIterable<Batch> {
  const first = opts.first ?? 0;
  opts.transforms.forEach((t, step) => {
    if (step < first) return;
    // The ordinal tells two records rejected by one transform with the same reason apart.
    let index = 0;
    const tctx: TransformContext = {
      log: opts.log,
      deadLetter: (d) => opts.deadLetter({ ...d, step, index: index++, unit_params: u.params }),
      unitId: u.id,
      unitParams: u.params,
    };
    batches = t.fn(batches, tctx);
  });
  return countRecords(batches, opts.counters);
}

async function* countRecords(batches: AsyncIterable<Batch>, counters: Counters): AsyncIterable<Batch> {
  for await (const b of batches) {
    counters.records += b.length;
    yield b;
  }
}
