/**
 * The source failed while a SQL sink read a unit's batches (mid-COPY, mid-insert): the sink undoes what the unit
 * started (a rolled-back transaction, a dropped staging table) and rethrows `original` as it was — the source's error:
 * whether the unit is tried again is the source's to say, not the sink's.
 */
export class SourceFailure extends Error {
  constructor(readonly original: unknown) {
    super('the source failed mid-unit');
  }
}
