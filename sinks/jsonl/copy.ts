/**
 * The jsonl sink's file work: the native path's checked copy is raw-jsonl/checked-copy.ts (a unit's raw JSONL file
 * copied as it is — compressed input is not recompressed — every line parsed and judged on the way); here, the
 * publish's join of staged copies into target-size files.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';

/** Writes `files` one after the other into `dest`, bytes as they are (gzip members stay members). */
export async function concatFiles(files: readonly string[], dest: string): Promise<void> {
  if (files.length === 1) return copyFile(files[0]!, dest);
  await pipeline(
    async function* () {
      for (const f of files) yield* createReadStream(f, { highWaterMark: 1 << 20 });
    },
    createWriteStream(dest, { highWaterMark: 1 << 20 }),
  );
}
