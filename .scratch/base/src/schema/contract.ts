/**
 * Schema contracts: what a run may do to an existing table (or file dataset) whose columns the data no longer fits.
 * Modelled on dlt's `schema_contract`. Two independent settings:
 *
 * - `columns` — a column (or a struct field, at any depth, also inside lists of structs) the table lacks;
 * - `types`   — a value whose type the column cannot hold.
 *
 * Each takes a mode:
 *
 * - `evolve` (default): the table follows the data. New columns are added; types widen (BIGINT → DOUBLE, DATE →
 *   TIMESTAMP, and, when nothing narrower holds both, → VARCHAR or JSON).
 * - `freeze`: the unit fails before anything of it is committed; the error names each change and the fix.
 * - `discard_row`: the rows that do not fit go to the dead-letter file (reason names the column and the change);
 *   the others commit.
 * - `discard_value`: the values that do not fit are removed from the row (stored as null) and each removal is
 *   written to the dead-letter file with the value; the row commits.
 *
 * Safe widenings — an open (all-null) column getting its first type, BIGINT → DOUBLE, DATE → TIMESTAMP — are
 * applied under every mode but `freeze`. A table that does not exist yet is created from the data under every mode.
 * The contract is applied by the engine (one gate per sink, against that sink's committed columns), so every sink
 * behaves the same; sinks only report the changes they made (`CommitResult.schemaChanges`).
 */
import { z } from 'zod';

export const CONTRACT_MODES = ['evolve', 'freeze', 'discard_row', 'discard_value'] as const;
export type ContractMode = (typeof CONTRACT_MODES)[number];

export interface SchemaContract {
  columns: ContractMode;
  types: ContractMode;
}

export const EVOLVE: SchemaContract = Object.freeze({ columns: 'evolve', types: 'evolve' });

const mode = z.enum(CONTRACT_MODES);

/** The `schema_contract` option, top level of a pipeline and on each sink (the sink's wins). */
export const schemaContractOption = z
  .union([
    mode,
    z
      .object({
        columns: mode
          .optional()
          .describe('New columns (and new struct fields): evolve | freeze | discard_row | discard_value.'),
        types: mode
          .optional()
          .describe('Values whose type the column cannot hold: evolve | freeze | discard_row | discard_value.'),
      })
      .strict(),
  ])
  .optional()
  .describe(
    'What a run may do to an existing table whose columns the data no longer fits: `evolve` (default: add columns, widen types), `freeze` (fail the unit before committing), `discard_row` (rows that do not fit go to dead letters), `discard_value` (values that do not fit become null and go to dead letters). One mode for both, or `{ columns: …, types: … }`. Safe widenings (BIGINT → DOUBLE, DATE → TIMESTAMP) happen under every mode but `freeze`.',
  );

export type SchemaContractOption = z.infer<typeof schemaContractOption>;

/** The effective contract: the sink's option over the pipeline's, over `evolve`. */
export function resolveContract(pipeline: SchemaContractOption, sink: SchemaContractOption): SchemaContract {
  const pick = (o: SchemaContractOption): Partial<SchemaContract> =>
    o === undefined ? {} : typeof o === 'string' ? { columns: o, types: o } : o;
  return { ...EVOLVE, ...pick(pipeline), ...pick(sink) };
}

export function isEvolve(c: SchemaContract): boolean {
  return c.columns === 'evolve' && c.types === 'evolve';
}
