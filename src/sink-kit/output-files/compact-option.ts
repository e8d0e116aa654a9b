/** `compact_after`, the same option on both file sinks (Parquet and JSONL): see compact.ts for what it does. */
import { z } from 'zod';

export const compactAfterOption = z
  .number()
  .int()
  .min(2)
  .optional()
  .describe(
    'Compact at the end of a run: once a partition (or the directory, unpartitioned) holds at least this many small published files (under half of `target_file_mb`), they are rewritten into files of about `target_file_mb`, as `sluice compact` does. Unset: only `sluice compact` compacts.',
  );
