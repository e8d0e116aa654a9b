/**
 * The lineage columns (`lineage: true` on a sink): their names, their declaration and the option every sink's schema
 * carries. Facts of the sinks' configuration, kept below them so a sink's config imports nothing above its layer; the
 * engine fills the columns (runtime/lineage.ts `withLineage`).
 */
import { z } from 'zod';
import { column, type DeclaredSchema } from '../core/declared.js';
import { TIMESTAMP, VARCHAR } from '../core/logical-type.js';

export const RUN_ID_COLUMN = '_sluice_run_id';
export const LOADED_AT_COLUMN = '_sluice_loaded_at';

/** The `lineage` option, in every sink's schema. */
export const lineageOption = z
  .boolean()
  .optional()
  .describe(
    `Add \`${RUN_ID_COLUMN}\` (the run that loaded the row, as \`sluice runs\` lists it) and \`${LOADED_AT_COLUMN}\` (when its unit was loaded, UTC) to every row. Rows are then decoded in JS (no native load of downloaded files). Default false.`,
  );

/** The two columns, declared after the transforms' own when those declare theirs. */
export const LINEAGE_COLUMNS: DeclaredSchema = [
  column(RUN_ID_COLUMN, VARCHAR, 'The run that loaded the row (as `sluice runs` lists it).', false),
  column(LOADED_AT_COLUMN, TIMESTAMP, "When the row's unit was loaded (UTC).", false),
];
