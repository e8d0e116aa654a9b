/**
 * The jsonl sink's file work: the native path's checked copy is raw-jsonl/checked-copy.ts (a unit's raw JSONL file
 * copied as it is — compressed input is not recompressed — every line parsed and judged on the way); here, the
 * joins of staged ranges (a publish of units not in one of this run's spools) and of whole files (compaction).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { SluiceError } from '../../src/core/errors.js';

/** `bytes` of `path` from byte `start`. */
export interface ByteRange {
  path: string;
  start: number;
  bytes: number;
}

/** Writes `files` one after the other into `dest`, bytes as they are (gzip members stay members). */
export async function concatFiles(files: readonly string[], dest: string): Promise<void> {
  if (files.length === 1) return copyFile(files[0]!, dest);
  await joinInto(
    files.map((f) => () => createReadStream(f, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>),
    dest,
  );
}

/**
 * Writes `ranges` one after the other into `dest` (after its bytes when `append`), bytes as they are; a range its
 * file does not hold throws.
 */
export async function concatRanges(
  ranges: readonly ByteRange[],
  dest: string,
  opts: { append?: boolean } = {},
): Promise<void> {
  await joinInto(
    ranges
      .filter((r) => r.bytes > 0)
      .map(
        (r) =>
          async function* () {
            let read = 0;
            const end = r.start + r.bytes - 1;
            for await (const chunk of createReadStream(r.path, { start: r.start, end, highWaterMark: 1 << 20 })) {
              read += (chunk as Buffer).length;
              yield chunk as Buffer;
            }
            if (read !== r.bytes)
              throw new SluiceError(
                `${r.path} holds ${r.start + read} bytes, not the ${end + 1} its manifest entry names`,
                {
                  hint: 'something else changed the staged file: restore it, or remove the units that name it from the manifest (the next run loads them again)',
                },
              );
          },
      ),
    dest,
    opts.append ? 'a' : 'w',
  );
}

async function joinInto(sources: (() => AsyncIterable<Buffer>)[], dest: string, flags = 'w'): Promise<void> {
  await pipeline(
    async function* () {
      for (const open of sources) yield* open();
    },
    createWriteStream(dest, { flags, highWaterMark: 1 << 20 }),
  );
}
