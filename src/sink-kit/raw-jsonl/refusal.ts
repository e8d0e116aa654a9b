/**
 * Which failures of a native JSONL load mean "this file, as a whole, is not for the native reader": a line that is
 * not a JSON object, or gzip that does not decompress. Only those become `NativeLoadRefused` (the engine then
 * decodes the file in JS, where a bad record is dead-lettered and broken bytes are downloaded again); every other
 * failure (disk full, permissions, a lock) is the unit's failure and is thrown as it is.
 */
import { NativeLoadRefused } from '../../core/errors.js';
import type { RawFile } from '../../core/types.js';
import { isBrokenGzip } from './gzip.js';
import { BadJsonlLine } from './line.js';

/** `err` as the refusal it stands for, or `err` itself when it is a real failure. */
export function asNativeRefusal(sink: string, err: unknown): unknown {
  if (err instanceof NativeLoadRefused) return err;
  if (err instanceof BadJsonlLine) return new NativeLoadRefused(sink, err.message, err);
  if (isBrokenGzip(err))
    return new NativeLoadRefused(sink, `gzip that does not decompress (${(err as Error).message})`, err);
  return err;
}

/** Throws the refusal for a file whose decode options a JSONL reader cannot honour. */
export function refuseUnlessJsonl(sink: string, file: RawFile): void {
  if (file.decode.format !== 'jsonl')
    throw new NativeLoadRefused(sink, `it reads JSONL natively, not ${file.decode.format}`);
}
