/**
 * The duckdb sink's configuration: its schema (validated once, by the registry, before the sink is built) and the
 * names derived from it. The rule that `write: merge` goes with `primary_key` lives here and nowhere else.
 */
import { z } from 'zod';
import { mergeKeyRule } from '../merge-key-rule.js';
import { lineageOption } from '../../src/engine/lineage.js';
import { checksOption } from '../../src/observe/checks/config.js';
import { schemaContractOption } from '../../src/schema/contract.js';

/**
 * DuckDB's own default is 80% of RAM, and it keeps that much of the written table cached: a 200k-record load
 * peaked at 880 MB RSS. Loading one unit at a time on one thread, 128 MB peaked at ~450 MB and 256 MB at ~540 MB,
 * at the same speed; a 200k-record unit loads within 128 MB too (DuckDB writes full row groups out as it goes).
 */
export const DEFAULT_MEMORY_LIMIT = '128MB';

/** Suffix of the table a `replace` run fills before it is swapped in. */
export const NEXT_SUFFIX = '__sluice_next';

export const duckdbSinkSchema = z
  .object({
    type: z.literal('duckdb'),
    path: z
      .string()
      .min(1)
      .describe(
        'DuckDB database file, relative to the pipeline file; created if missing. Several sinks may share one file, each with its own table.',
      ),
    table: z
      .string()
      .min(1)
      .describe(
        'Table to write. Created from the data on first write with native STRUCT/LIST/TIMESTAMP/DATE columns — for a normalizer preset, when the run starts, with every column the preset declares; new fields become new columns and widened types are altered in place (see `schema_contract`).',
      ),
    schema: z
      .string()
      .min(1)
      .optional()
      .describe('DuckDB schema (namespace) of the table; created if missing. Default `main`.'),
    write: z
      .enum(['append', 'replace', 'merge'])
      .default('append')
      .describe(
        '`append`: add the rows. `replace`: the run fills a new table that replaces the old one in one transaction when the run finishes (readers see the old table or the complete new one; a failed run leaves the old one). `merge`: upsert on `primary_key` — a row whose key exists replaces the stored row; within one unit the last row for a key wins.',
      ),
    primary_key: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Column(s) identifying a row, for `write: merge` (required there, not allowed otherwise).'),
    memory_limit: z
      .string()
      .regex(/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, 'a size such as 512MB or 2GB')
      .default(DEFAULT_MEMORY_LIMIT)
      .describe(
        `DuckDB's memory limit for the database file (shared by the sinks writing to it); beyond it DuckDB spills to \`<file>.tmp/\`. The default ${DEFAULT_MEMORY_LIMIT} keeps a load's peak memory low at no cost in speed (units load one at a time per file); 64MB ran out of memory loading a 10k-record unit.`,
      ),
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    checks: checksOption,
  })
  .strict()
  .superRefine(mergeKeyRule);

export type DuckDBSinkConfig = z.infer<typeof duckdbSinkSchema>;

/** The names a sink works with, all derived from its config. */
export interface TableNames {
  /** DuckDB schema (namespace) of the table. */
  schema: string;
  /** The table readers query. */
  table: string;
  /** Table rows go to: the table itself, or for `replace` the next generation. */
  target: string;
  /** `_sluice_state.table_name` of the table and of the target. */
  stateKey: string;
  targetStateKey: string;
  /** Key of the table's lock and claim in the shared database: one per table, whichever generation. */
  lockKey: string;
}

export function tableNames(config: DuckDBSinkConfig): TableNames {
  const schema = config.schema ?? 'main';
  const replace = config.write === 'replace';
  const stateKey = schema === 'main' ? config.table : `${schema}.${config.table}`;
  return {
    schema,
    table: config.table,
    target: replace ? `${config.table}${NEXT_SUFFIX}` : config.table,
    stateKey,
    targetStateKey: replace ? `${stateKey}${NEXT_SUFFIX}` : stateKey,
    lockKey: `${schema}.${config.table}`,
  };
}
