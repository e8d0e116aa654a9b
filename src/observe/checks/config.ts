/**
 * A sink's `checks:`: assertions about what is in the sink once the run committed, with the names users know from
 * dbt and Sling. Each sink's config schema takes `checks: checksOption`.
 */
import { z } from 'zod';
import { durationOption } from '../duration.js';
import { checkSqlProblem } from './sql-text.js';

const common = {
  name: z.string().min(1).optional().describe('Names the check in reports (default: its type and columns).'),
  severity: z
    .enum(['error', 'warn'])
    .default('error')
    .describe('`error`: a failure fails the run (exit code 6; the data stays committed). `warn`: it is reported.'),
};

const column = z.string().min(1);
const columns = z.array(column).min(1);

const rowCount = z
  .object({
    type: z.literal('row_count'),
    scope: z
      .enum(['table', 'run'])
      .default('table')
      .describe('`table`: every row in the sink; `run`: the rows this run committed.'),
    min: z.number().int().min(0).optional().describe('At least this many rows.'),
    max: z.number().int().min(0).optional().describe('At most this many rows.'),
    ...common,
  })
  .strict()
  .refine((c) => c.min !== undefined || c.max !== undefined, { message: 'give `min`, `max` or both' });

const freshness = z
  .object({
    type: z.literal('freshness'),
    column: column.describe('A timestamp or date column.'),
    max_age: durationOption('The newest value must be at most this old (e.g. "26h").'),
    ...common,
  })
  .strict();

const notNull = z
  .object({ type: z.literal('not_null'), columns: columns.describe('Columns that must never be null.'), ...common })
  .strict();

const unique = z
  .object({
    type: z.literal('unique'),
    columns: columns.describe('Columns whose values (together) must not repeat.'),
    ...common,
  })
  .strict();

const acceptedValues = z
  .object({
    type: z.literal('accepted_values'),
    column,
    values: z
      .array(z.union([z.string(), z.number(), z.boolean()]))
      .min(1)
      .describe('The only values allowed (null is allowed too: pair with not_null to refuse it).'),
    ...common,
  })
  .strict();

const sql = z
  .object({
    type: z.literal('sql'),
    name: z.string().min(1).describe('Names the check in reports.'),
    sql: z
      .string()
      .min(1)
      .superRefine((text, ctx) => {
        const problem = checkSqlProblem(text);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `not a check sluice will run: ${problem}` });
      })
      .describe(
        'One query returning the violating rows; `{table}` stands for the sink’s table (for file sinks, its committed files). No rows: the check passes. It runs read-only: one statement, in a read-only transaction, reaching nothing but the sink’s table (DuckDB, file sinks) — anything else is refused.',
      ),
    severity: common.severity,
  })
  .strict();

// One definition in config/pipeline.schema.json, referred to by every sink that takes checks.
export const checkSchema = z
  .discriminatedUnion('type', [rowCount, freshness, notNull, unique, acceptedValues, sql])
  .meta({ id: 'sink_check' });

export type CheckConfig = z.output<typeof checkSchema>;

export const checksOption = z
  .array(checkSchema)
  .optional()
  .describe(
    'Checks run after the run committed (`row_count`, `freshness`, `not_null`, `unique`, `accepted_values`, `sql`); each reported with a few violating rows. An `error` check that fails fails the run with exit code 6.',
  );
