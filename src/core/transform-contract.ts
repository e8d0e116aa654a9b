/**
 * The transform contract: batches in, batches out, with the unit they belong to. The smallest contract, in a file of
 * its own like the others so that types.ts is only their index.
 */
import type { Batch, DeadLetterFn, Logger } from './records.js';

export interface TransformContext {
  log: Logger;
  deadLetter: DeadLetterFn;
  /** Id of the unit being transformed (for dead letters and derived columns). */
  unitId: string;
  /** The unit's params (e.g. query, page, fetch time), for normalizers that add context columns. */
  unitParams: Readonly<Record<string, unknown>>;
}

/** Batches in, batches out; pure where it can be. */
export type Transform = (batches: AsyncIterable<Batch>, ctx: TransformContext) => AsyncIterable<Batch>;
