/**
 * The checkpoint a sink commits with a unit (`UnitCommit`, core/types.ts): handed over as a value the sink asks for
 * when it commits, not read from the unit, so that when a sink reads it can never decide what it stores.
 */
import type { BackfillWindow, UnitCommit } from './types.js';

/**
 * A sink asked for a unit's checkpoint before it drained the unit's batches: a bug in the sink (the value depends
 * on rows it has not read yet). Never a user's error, never retried as transient.
 */
export class CheckpointNotFinal extends Error {
  constructor(unitId: string) {
    super(
      `programming error: the checkpoint of unit ${unitId} was asked for before the unit's batches were drained; ` +
        'a sink must read it when it commits, after the last batch',
    );
    this.name = 'CheckpointNotFinal';
  }
}

/** A unit that moves no cursor (a source that is not incremental, a dead-letter replay, a test). */
export const NO_CHECKPOINT: UnitCommit = Object.freeze({ checkpoint: () => undefined });

/** A checkpoint known before the unit is read (it does not depend on the rows). */
export function knownCheckpoint(value: unknown): UnitCommit {
  return { checkpoint: () => value };
}

/** `timestamp > "2025-03-01T00:00:00.000Z" and ≤ "2025-03-02T00:00:00.000Z"`: a backfill's window as logs say it. */
export function describeWindow(w: BackfillWindow): string {
  return `${w.of} > ${JSON.stringify(w.from)}${w.to !== undefined ? ` and ≤ ${JSON.stringify(w.to)}` : ''}`;
}
