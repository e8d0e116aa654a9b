/**
 * The postgres sink's configuration: its schema (validated once, by the registry) and the names derived from it.
 * Option names follow the duckdb sink's (`table`, `schema`, `write`, `primary_key`); `url` replaces `path`.
 */
import { z } from 'zod';
import type { StoreLimits } from '../../src/core/types.js';
import { mergeKeyRule } from '../merge-key-rule.js';
import { lineageOption } from '../../src/engine/lineage.js';
import { schemaContractOption } from '../../src/schema/contract.js';
import { onUnstorableOption } from '../../src/schema/storable.js';

/** Suffix of the table a `replace` run fills before it is swapped in (as in the duckdb sink). */
export const NEXT_SUFFIX = '__sluice_next';

export const postgresSinkSchema = z
  .object({
    type: z.literal('postgres'),
    url: z
      .string()
      .optional()
      .describe(
        'libpq connection URL, e.g. `${DATABASE_URL:-}` or `postgres://user@host:5432/db?sslmode=require`. Parts it leaves out come from the libpq environment (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`) and ~/.pgpass; unset or empty: all of them do. The password is never logged.',
      ),
    schema: z
      .string()
      .min(1)
      .default('public')
      .describe('Postgres schema of the table (and of `_sluice_state`); created if missing. Default `public`.'),
    table: z
      .string()
      .min(1)
      .describe(
        'Table to write. Created from the declared or first rows: timestamps `timestamptz`, lists of scalars native arrays, objects and lists of objects `jsonb`; new fields become new columns and widened types are altered in place.',
      ),
    write: z
      .enum(['append', 'replace', 'merge'])
      .default('append')
      .describe(
        '`append`: add the rows. `replace`: the run fills a new table that replaces the old one in one transaction when the run finishes. `merge`: upsert on `primary_key` (`INSERT … ON CONFLICT … DO UPDATE`); within one unit the last row for a key wins.',
      ),
    primary_key: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Column(s) identifying a row, for `write: merge` (required there, not allowed otherwise).'),
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    on_unstorable: onUnstorableOption,
  })
  .strict()
  .superRefine(mergeKeyRule);

export type PostgresSinkConfig = z.infer<typeof postgresSinkSchema>;

/** Column names Postgres refuses in a table (its system columns) or sluice uses beside the data. */
const RESERVED: Readonly<Record<string, string>> = {
  _sluice_seq: 'the merge staging table numbers rows in it',
  ...Object.fromEntries(
    ['ctid', 'xmin', 'xmax', 'cmin', 'cmax', 'tableoid'].map((c) => [c, 'a Postgres system column']),
  ),
};

/**
 * What a Postgres table holds: column names (top-level keys; objects are jsonb, whose keys are data) of 1–63 bytes
 * without NUL, not a system column; at most 1,600 columns (1,599 under `merge`, whose staging table adds one) and
 * 8,160 bytes of a row in a page ("row is too big"); jsonb values up to 255 MB, nested as deep as its parser
 * recurses within `max_stack_depth` (1,000 keeps far from it, and from JSON.stringify's own limit on the way).
 */
export function postgresLimits(config: Pick<PostgresSinkConfig, 'write'>): StoreLimits {
  return {
    store: 'Postgres',
    names: 'top',
    maxNameBytes: 63,
    reservedNames: RESERVED,
    maxColumns: config.write === 'merge' ? 1599 : 1600,
    maxRowBytes: 8160,
    maxNesting: 1000,
    maxRecordBytes: 255 * 2 ** 20,
    maxRecordBytesWhy: 'jsonb holds at most 255 MB',
  };
}

/** The URL to connect with; an empty one (`${DATABASE_URL:-}` with the variable unset) means the environment's. */
export function connectionUrl(config: Pick<PostgresSinkConfig, 'url'>): string | undefined {
  return config.url === undefined || config.url.trim() === '' ? undefined : config.url;
}

/** The names a sink works with, all derived from its config. */
export interface TableNames {
  schema: string;
  /** The table readers query. */
  table: string;
  /** Table rows go to: the table itself, or for `replace` the next generation. */
  target: string;
  /** `_sluice_state.table_name` of the table and of the target. */
  stateKey: string;
  targetStateKey: string;
}

export function tableNames(config: Pick<PostgresSinkConfig, 'schema' | 'table' | 'write'>): TableNames {
  const replace = config.write === 'replace';
  const stateKey = `${config.schema}.${config.table}`;
  return {
    schema: config.schema,
    table: config.table,
    target: replace ? `${config.table}${NEXT_SUFFIX}` : config.table,
    stateKey,
    targetStateKey: replace ? `${stateKey}${NEXT_SUFFIX}` : stateKey,
  };
}
