/**
 * One stream of a unit's batches into several sinks at once, each committing it on its own, each through its own
 * store gate (store-gate.ts: what its store cannot hold goes to the dead letters) and its own schema-contract gate
 * (schema-gate.ts) when its contract is not `evolve`.
 */
import type { Batch, CommitResult, DeadLetterFn, Logger, Sink, UnitCommit, WorkUnit } from '../../core/types.js';
import { EVOLVE, isEvolve, type SchemaContract } from '../../schema/contract.js';
import { silentLogger } from '../logger.js';
import { tee } from '../tee.js';
import { gated, SchemaContractError } from './schema-gate.js';
import { judged, SinkJudges } from './store-gate.js';

/** What the engine knows about the sinks beyond their contract (core/types.ts). */
export interface SinkWriting {
  /** The sink's effective schema contract (`resolveContract`); absent: `evolve`. */
  contractOf?(sink: Sink): SchemaContract;
  deadLetter?: DeadLetterFn;
  /** Told of every commit (the schema changes it made go into the run's summary). */
  onCommit?(sink: Sink, result: CommitResult): void;
  /** The run's record judge of each sink; absent: each unit is judged on its own, refusing what it cannot store. */
  judges?: SinkJudges;
  /** Where repairs (`on_unstorable: repair`) are reported. */
  log?: Logger;
}

export function judgesOf(writing: SinkWriting | undefined): SinkJudges {
  return writing?.judges ?? new SinkJudges();
}

export function contractOf(sink: Sink, writing: SinkWriting | undefined): SchemaContract {
  return writing?.contractOf?.(sink) ?? EVOLVE;
}

/**
 * `unit`: the sink-side unit; `commit`: what every sink commits with its rows; `sourceUnitId`: the source's id of
 * it, which dead letters carry.
 */
export async function writeToSinks(
  unit: WorkUnit,
  sinks: readonly Sink[],
  batches: AsyncIterable<Batch>,
  commit: UnitCommit,
  writing?: SinkWriting,
  sourceUnitId: string = unit.id,
): Promise<void> {
  const streams = tee(batches, sinks.length);
  const judges = judgesOf(writing);
  // Every sink is let finish (commit or fail) before the unit's outcome is told: a sink still writing when the run
  // closes its sinks would be cut off mid-commit.
  const outcomes = await Promise.allSettled(
    sinks.map(async (sink, k) => {
      const stream = streams[k]!;
      try {
        const contract = contractOf(sink, writing);
        const deadLetter = writing?.deadLetter ?? (() => undefined);
        const judge = await judges.for(sink);
        const storable = judge
          ? judged(stream, judge, { sink, unitId: sourceUnitId, deadLetter, log: writing?.log ?? silentLogger })
          : stream;
        // Under `evolve` the stream goes to the sink without a contract gate: it costs nothing there.
        const input = isEvolve(contract)
          ? storable
          : gated(storable, {
              contract,
              columns: await sink.currentColumns?.(),
              sink,
              unitId: sourceUnitId,
              deadLetter,
            });
        let result: CommitResult;
        try {
          result = await sink.writeUnit(unit, input, commit);
        } catch (err) {
          // Whatever the sink made of the gate's refusal, the refusal is the cause.
          throw contractRefusal(err) ?? err;
        }
        writing?.onCommit?.(sink, result);
      } finally {
        // A sink that found the unit committed returns without reading, and one that failed stops reading: release
        // its share of the tee, or the other sinks would wait for it.
        await stream[Symbol.asyncIterator]().return?.();
      }
    }),
  );
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}

/** The gate's refusal behind a sink's error, if that is what it is. */
function contractRefusal(err: unknown): SchemaContractError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (e instanceof SchemaContractError) return e;
  return undefined;
}
