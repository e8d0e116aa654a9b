/**
 * The names a SQL sink (duckdb, postgres) works with, all derived from its config: the table readers query, the
 * one rows go to (for `replace`, the next generation), and their keys in `_sluice_state`.
 */

/** Suffix of the table a `replace` run fills before it is swapped in. */
export const NEXT_SUFFIX = '__sluice_next';

export interface TableNames {
  /** Schema (namespace) of the table. */
  schema: string;
  /** The table readers query. */
  table: string;
  /** Table rows go to: the table itself, or for `replace` the next generation. */
  target: string;
  /** `_sluice_state.table_name` of the table and of the target. */
  stateKey: string;
  targetStateKey: string;
}

/** The table's names; `stateKey` is how the dialect spells the table in `_sluice_state`. */
export function generationNames(schema: string, table: string, write: string, stateKey: string): TableNames {
  const replace = write === 'replace';
  return {
    schema,
    table,
    target: replace ? `${table}${NEXT_SUFFIX}` : table,
    stateKey,
    targetStateKey: replace ? `${stateKey}${NEXT_SUFFIX}` : stateKey,
  };
}
