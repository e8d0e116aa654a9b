/** The parquet sink's configuration schema, validated once by the registry before the sink is built. */
import { z } from 'zod';
import type { StoreLimits } from '../../src/core/types.js';
import { lineageOption } from '../../src/schema/lineage.js';
import { checksOption } from '../../src/observe/checks/config.js';
import { schemaContractOption } from '../../src/schema/contract.js';
import { onUnstorableOption } from '../../src/schema/storable.js';
import { DUCKDB_MAX_NESTING } from '../duckdb/config.js';
import { isS3Url, parseS3Url, s3Option } from '../../src/sink-kit/output-files/s3.js';
import { compactAfterOption } from '../../src/sink-kit/output-files/compact-option.js';

export const DEFAULT_TARGET_FILE_MB = 128;
/**
 * Rows per row group. DuckDB buffers a whole row group before compressing it, so this bounds the writer's memory:
 * its default (122,880) holds ~400 MB of company profiles; 20,000 keeps a load within the 300 MB budget at a
 * measured size cost of a few percent (`bench/sinks.ts`).
 */
export const DEFAULT_ROW_GROUP_SIZE = 20_000;
export const parquetSinkSchema = z
  .object({
    type: z.literal('parquet'),
    path: z
      .string()
      .min(1)
      .describe(
        'Output directory, relative to the pipeline file, or `s3://bucket/prefix/` (see `s3`); created if missing. Files are `part-<id>-<n>.parquet` (under `<column>=<value>/` directories with `partition_by`), listed with the units they hold in `_sluice_manifest.json` (shards: all in this one path, each with its own `_sluice_manifest.shard-<i>-of-<n>.json`).',
      ),
    write: z
      .enum(['append', 'replace'])
      .default('append')
      .describe(
        '`append`: every run adds files. `replace`: the run writes a new generation and `path` (then a symlink) switches to it atomically when the run finishes. Shards (`--shard`) write `append` only.',
      ),
    s3: s3Option,
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    checks: checksOption,
    on_unstorable: onUnstorableOption,
    compression: z
      .enum(['zstd', 'snappy', 'gzip', 'lz4', 'brotli', 'uncompressed'])
      .default('zstd')
      .describe('Parquet compression codec.'),
    compression_level: z
      .number()
      .int()
      .min(1)
      .max(22)
      .optional()
      .describe('Codec level, for zstd (1–22; DuckDB default 3) and gzip/brotli.'),
    row_group_size: z
      .number()
      .int()
      .min(1_000)
      .default(DEFAULT_ROW_GROUP_SIZE)
      .describe(
        `Rows per row group (default ${DEFAULT_ROW_GROUP_SIZE}). The writer holds a whole row group in memory: larger groups compress a little better and cost memory.`,
      ),
    partition_by: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'Columns to partition by, hive style (`country_code=US/part-….parquet`); the values live in the directory names, not in the files (read with `hive_partitioning = true`).',
      ),
    target_file_mb: z
      .number()
      .positive()
      .optional()
      .describe(
        `Target size of a Parquet file in MB (default ${DEFAULT_TARGET_FILE_MB}). Units are staged until their rows make a file of about this size, then published together; the last file of a run may be smaller.`,
      ),
    compact_after: compactAfterOption,
    file_size_bytes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('The target file size in bytes, instead of `target_file_mb`.'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.target_file_mb !== undefined && c.file_size_bytes !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['file_size_bytes'],
        message: 'give either `target_file_mb` or `file_size_bytes`, not both',
      });
  });

export type ParquetSinkConfig = z.infer<typeof parquetSinkSchema>;

/**
 * What a Parquet output holds, written by DuckDB: DuckDB's names and nesting (Parquet readers match names ignoring
 * case too); records up to 64 MiB as JSON text (a publish reads the staged units with buffers of twice the longest
 * line, and no memory limit); with `partition_by`, values that make a directory name (`<column>=<value>`, escaped
 * `%XX` but for `A-Za-z0-9-._~`) of at most 255 bytes — the longest file name (DuckDB failed to create one of 300) —
 * and whose directories, with the output's own path, the temp directory a publish writes in and the file name, stay
 * within a path (4,096 bytes on disk) or an S3 key (1,024 bytes). A value that a reader takes for null (`NULL` in any
 * case, `__HIVE_DEFAULT_PARTITION__`) would share null's directory: refused too (`partitions`, schema/storable.ts).
 */
export function parquetLimits(config: Pick<ParquetSinkConfig, 'path' | 'partition_by'>, root: string): StoreLimits {
  // Room for the temp and generation directories a publish writes through, and a data file's name.
  const room = 256;
  const budget = isS3Url(root)
    ? 1024 - Buffer.byteLength(parseS3Url(root).prefix) - room
    : 4096 - Buffer.byteLength(root) - room;
  return {
    store: 'Parquet (written by DuckDB)',
    names: 'all',
    caseInsensitive: true,
    maxNesting: DUCKDB_MAX_NESTING,
    maxRecordBytes: 64 * 2 ** 20,
    maxRecordBytesWhy: 'a publish reads staged records with buffers of twice the longest',
    ...(config.partition_by && {
      partitions: { columns: config.partition_by, maxSegmentBytes: 255, maxPathBytes: Math.max(0, budget) },
    }),
  };
}
