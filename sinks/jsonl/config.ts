/** The jsonl sink's configuration schema, validated once by the registry before the sink is built. */
import { z } from 'zod';
import type { StoreLimits } from '../../src/core/types.js';
import { lineageOption } from '../../src/schema/lineage.js';
import { checksOption } from '../../src/observe/checks/config.js';
import { schemaContractOption } from '../../src/schema/contract.js';
import { onUnstorableOption } from '../../src/schema/storable.js';
import { s3Option } from '../../src/sink-kit/output-files/s3.js';
import { compactAfterOption } from '../../src/sink-kit/output-files/compact-option.js';

/**
 * gzip level 1 compresses ~3× faster than the default 6 for ~25% larger files (200k records: +3 CPU-s over plain
 * text at level 1, +9.5 at level 6; 151 vs 121 MB; `bench/sinks.ts`): at level 6 gzip, not JSON, limits a load.
 */
export const DEFAULT_GZIP_LEVEL = 1;

/**
 * Half the Parquet sink's 128 MB: the same rows take ~6× the bytes as JSON, and a gzip file cannot be split, so
 * every reader (DuckDB, Spark, a warehouse's COPY) decompresses one file on one thread: 64 MB of gzip level 1 is
 * ~250 MB of JSON for that thread. Units stay invisible until their file is full, so a larger target also means
 * a long crawl shows its rows later.
 */
export const DEFAULT_TARGET_FILE_MB = 64;

export const jsonlSinkSchema = z
  .object({
    type: z.literal('jsonl'),
    path: z
      .string()
      .min(1)
      .describe(
        'Output directory, relative to the pipeline file, or `s3://bucket/prefix/` (see `s3`); created if missing. Files are `part-<id>-<n>.jsonl` (or `.jsonl.gz`) of about `target_file_mb`, listed with the units they hold in `_sluice_manifest.json` (shards: all in this one path, each with its own `_sluice_manifest.shard-<i>-of-<n>.json`).',
      ),
    compress: z
      .boolean()
      .optional()
      .describe('gzip the files (`.jsonl.gz`). Default: true when `path` ends in `.gz`, else false.'),
    gzip_level: z
      .number()
      .int()
      .min(1)
      .max(9)
      .default(DEFAULT_GZIP_LEVEL)
      .describe(
        'gzip level when compressing: 1 is fastest (the default; ~3× faster than 6, files ~25% larger), 9 smallest.',
      ),
    write: z
      .enum(['append', 'replace'])
      .default('append')
      .describe(
        '`append`: every run adds its files. `replace`: the run writes a new generation and `path` (then a symlink) switches to it atomically when the run finishes; readers see the old files or all of the new ones. Shards (`--shard`) write `append` only.',
      ),
    target_file_mb: z
      .number()
      .positive()
      .optional()
      .describe(
        `Target size of a file in MB, as stored (compressed when gzip; default ${DEFAULT_TARGET_FILE_MB}). Units are staged until their rows make a file of about this size, then published together; a unit is never split, and the last file of a run may be smaller.`,
      ),
    compact_after: compactAfterOption,
    s3: s3Option,
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    checks: checksOption,
    on_unstorable: onUnstorableOption,
  })
  .strict();

/**
 * What a JSONL output holds: any key (keys are JSON text, not names). Nesting: the manifest keeps the dataset's
 * columns as JSON, three levels of JSON per level of a record, and JSON.stringify ran out of stack on a record
 * nested 1,500 levels deep (measured); 500 keeps well within it. Size: a record is one JS string on the way out,
 * and V8's strings end at 2^29 characters.
 */
export const JSONL_LIMITS: StoreLimits = Object.freeze({
  store: 'a JSONL output',
  names: 'none',
  maxNesting: 500,
  maxRecordBytes: 256 * 2 ** 20,
  maxRecordBytesWhy: 'a line is one JavaScript string on its way out, and those end at 2^29 characters',
});

export type JsonlSinkConfig = z.infer<typeof jsonlSinkSchema>;
