/**
 * The duckdb sink's configuration: its schema (validated once, by the registry, before the sink is built) and the
 * names derived from it. The rule that `write: merge` goes with `primary_key` lives here and nowhere else.
 */
import { z } from 'zod';
import type { StoreLimits } from '../../src/core/types.js';
import { mergeKeyRule } from '../../src/sink-kit/merge-key-rule.js';
import { lineageOption } from '../../src/schema/lineage.js';
import { checksOption } from '../../src/observe/checks/config.js';
import { schemaContractOption } from '../../src/schema/contract.js';
import { onUnstorableOption } from '../../src/schema/storable.js';
import { generationNames, type TableNames as GenerationNames } from '../../src/sink-kit/warehouse/names.js';

/**
 * DuckDB's own default is 80% of RAM, and it keeps that much of the written table cached: a 200k-record load
 * peaked at 880 MB RSS. Loading one unit at a time on one thread, 128 MB peaked at ~450 MB and 256 MB at ~540 MB,
 * at the same speed; a 200k-record unit loads within 128 MB too (DuckDB writes full row groups out as it goes).
 */
export const DEFAULT_MEMORY_LIMIT = '128MB';

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
        `DuckDB's memory limit for the database file (shared by the sinks writing to it); beyond it DuckDB spills to \`<file>.tmp/\`. The default ${DEFAULT_MEMORY_LIMIT} keeps a load's peak memory low at no cost in speed (loads run one at a time per file; appends of raw files commit in groups whose row groups DuckDB writes into the file as it inserts them). A group that runs out of memory (records of 34 columns did at 96MB) makes the sink commit its units one at a time from then on, slower; 64MB ran out of memory loading one 10k-record unit.`,
      ),
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    checks: checksOption,
    on_unstorable: onUnstorableOption,
  })
  .strict()
  .superRefine(mergeKeyRule);

export type DuckDBSinkConfig = z.infer<typeof duckdbSinkSchema>;

/** The names a sink works with, all derived from its config. */
export interface TableNames extends GenerationNames {
  /** Key of the table's lock and claim in the shared database: one per table, whichever generation. */
  lockKey: string;
}

export function tableNames(config: DuckDBSinkConfig): TableNames {
  const schema = config.schema ?? 'main';
  const stateKey = schema === 'main' ? config.table : `${schema}.${config.table}`;
  return { ...generationNames(schema, config.table, config.write, stateKey), lockKey: `${schema}.${config.table}` };
}

/**
 * Deepest nesting DuckDB's writer reads: a STRUCT or LIST type 166 levels deep fails CREATE TABLE, `read_json` and
 * Parquet's COPY ("Max expression depth limit of 1000 exceeded", DuckDB 1.5, measured); 100 leaves room for the
 * conversions a widening ALTER nests around each level (table.ts `convertExpr`).
 */
export const DUCKDB_MAX_NESTING = 100;

/** DuckDB's size units: KB = 1000 bytes, KiB = 1024. */
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** `128MB` → bytes, as DuckDB reads a memory limit. */
export function sizeBytes(size: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(size.trim());
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`not a size: ${size}`);
  return Math.floor(Number(m[1]) * unit);
}

/**
 * Memory a load takes per column of the table beside a base (DuckDB 1.5, one thread, measured): inserting a row
 * through `read_json` into a table of BIGINT columns ran out of memory beyond 438 columns at a 64MB limit, 1,383 at
 * 128MB and ~3,175 at 256MB — about 70 KB a column over ~30 MB.
 */
const BYTES_PER_COLUMN = 80_000;
const BASE_BYTES = 32e6;

/**
 * What a DuckDB table holds: names (columns and struct fields) neither empty nor holding NUL, one per spelling in
 * any case; nesting up to `DUCKDB_MAX_NESTING`; records up to an eighth of `memory_limit` as JSON text —
 * `read_json` reads a staged unit with two buffers of twice its longest line (read.ts), within the memory limit:
 * at 128MB a 24 MB line loaded and a 32 MB one ran out of memory (measured); as many columns as a load has memory
 * for (`BYTES_PER_COLUMN`: 1,200 at the default 128MB).
 */
export function duckdbLimits(config: Pick<DuckDBSinkConfig, 'memory_limit'>): StoreLimits {
  const memory = sizeBytes(config.memory_limit);
  return {
    store: 'DuckDB',
    names: 'all',
    caseInsensitive: true,
    maxColumns: Math.max(100, Math.floor((memory - BASE_BYTES) / BYTES_PER_COLUMN)),
    maxNesting: DUCKDB_MAX_NESTING,
    maxRecordBytes: Math.floor(memory / 8),
    maxRecordBytesWhy: `an eighth of the sink's memory_limit ${config.memory_limit}`,
  };
}
