/** One stream of a unit's batches into several sinks at once, each committing it on its own. */
import type { Batch, Sink, WorkUnit } from '../../core/types.js';
import { tee } from '../tee.js';

export async function writeToSinks(
  unit: WorkUnit,
  sinks: readonly Sink[],
  batches: AsyncIterable<Batch>,
): Promise<void> {
  const streams = tee(batches, sinks.length);
  await Promise.all(
    sinks.map(async (sink, k) => {
      await sink.writeUnit(unit, streams[k]!);
      // A sink that found the unit committed returns without reading: release its share of the tee.
      await streams[k]![Symbol.asyncIterator]().return?.();
    }),
  );
}
