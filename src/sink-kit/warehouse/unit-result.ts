/**
 * What both SQL sinks say about a unit's commit: the test seam inside its transaction, the schema changes it
 * reports, and the hint of a failed load (nothing of the unit was committed).
 */
import { SluiceError } from '../../core/errors.js';
import type { CommitResult, SchemaChange } from '../../core/types.js';

export const UNCOMMITTED_HINT =
  'nothing of the unit was committed; fix the cause and run again (committed units are skipped)';

/** `r` reporting `changes` (and nothing when there were none). */
export function withChanges(r: CommitResult, changes: readonly SchemaChange[]): CommitResult {
  const { schemaChanges: _, ...rest } = r;
  return changes.length > 0 ? { ...rest, schemaChanges: [...changes] } : rest;
}

/** The warning for rows of nothing but nulls that came while no table existed to hold them. */
export function nullRowsDropped(label: string, rows: number): string {
  return `${label}: ${rows} record(s) with only null values and no table yet: not stored`;
}

/**
 * How many times a unit is fitted to a table that another process keeps changing under its load (a concurrent
 * writer's columns arrive between the check and the insert): then the unit gives up rather than loop forever.
 */
export const MAX_FIT_ROUNDS = 5;

export function keptChanging(label: string, unitId: string): SluiceError {
  return new SluiceError(`${label}: the table kept changing under unit ${unitId}`, {
    hint: 'another process keeps altering the table: run again once it is done',
  });
}
