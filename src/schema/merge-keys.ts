/** `write: merge` needs its key in the data: one check for every sink that upserts (DuckDB, Postgres). */
import { SluiceError } from '../core/errors.js';
import type { LogicalType } from '../core/logical-type.js';

/** Every row needs the key: says which key column the unit's data lacks, before anything is written. */
export function checkKeysPresent(
  keys: readonly string[],
  incoming: ReadonlyMap<string, LogicalType>,
  label: string,
): void {
  for (const k of keys) {
    if (!incoming.has(k))
      throw new SluiceError(`${label}: primary key column "${k}" is not in the data`, {
        hint: `every row needs the key for \`write: merge\`: fix \`primary_key\` (the data has ${[...incoming.keys()].slice(0, 12).join(', ')}), or add the field with a transform`,
      });
  }
}
