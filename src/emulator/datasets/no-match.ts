/**
 * A filter the service knows to match nothing is refused up front with 422 "Provided filter did not match any
 * records" (docs/service.md §2.3): no job, nothing charged. The emulator knows it the way a job would find out: it
 * scans the records that exist now, in slices of a few milliseconds (the server keeps answering meanwhile), and stops
 * at the first match (the job may match: start it), at the end (nothing matches: 422), or after as many records as a
 * job could scan inside the 5-minute limit (not known up front: the job starts, and its snapshot says).
 */
import type { EmulatorContext } from '../context.js';
import type { DatasetDef } from '../data/datasets-catalogue.js';
import type { RecordPredicate } from './filter-compile.js';
import { sizeAt } from './growth.js';
import { datasetNow, scanBudget } from './jobs.js';

export const NO_MATCH_ERROR = 'Provided filter did not match any records';

const SLICE_MS = 8;

export async function knownToMatchNothing(
  ctx: EmulatorContext,
  dataset: DatasetDef,
  predicate: RecordPredicate,
): Promise<boolean> {
  const { seed, size } = ctx.options;
  const records = sizeAt(seed, size, ctx.clock.now(), ctx.clock.pinned);
  const scanned = datasetNow(ctx, dataset);
  const end = Math.min(records, scanBudget(ctx));
  let i = 0;
  while (i < end) {
    const sliceEnd = performance.now() + SLICE_MS;
    do {
      if (predicate(scanned.record(seed, i))) return false;
      i++;
    } while (i < end && ((i & 63) !== 0 || performance.now() < sliceEnd));
    if (ctx.closed.aborted) return false;
    if (i < end) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return end === records;
}
