/** gzip as the native paths meet it in a unit's raw file: sniffed by its magic bytes, refused when broken. */
import { open } from 'node:fs/promises';

/** Sources name their files as they like (`…jsonl.data`): only the first two bytes say whether it is gzip. */
export async function isGzipFile(file: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { bytesRead, buffer } = await fh.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

/**
 * zlib's codes for compressed bytes it cannot decode: corrupt (`Z_DATA_ERROR`, `Z_NEED_DICT`) or cut short
 * (`Z_BUF_ERROR`: "unexpected end of file"). `Z_MEM_ERROR` is not among them: that is this process, not the file.
 */
const BROKEN_GZIP = new Set(['Z_DATA_ERROR', 'Z_BUF_ERROR', 'Z_NEED_DICT']);

/** Whether `err` is zlib saying the compressed bytes are broken (read from its `code`, not its message). */
export function isBrokenGzip(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && BROKEN_GZIP.has(code);
}
