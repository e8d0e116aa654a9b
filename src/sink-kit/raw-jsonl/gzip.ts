/**
 * gzip as the native paths meet it in a unit's raw file: sniffed by its magic bytes, inflated through reused read
 * buffers, refused when broken.
 */
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';

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

/**
 * The decompressed bytes of gzip file `file`, as `createGunzip({ chunkSize })` gives them (zlib's errors included),
 * the compressed bytes read `chunkSize` at a time into two buffers used again and again. A read stream allocates a
 * buffer per read that lives until zlib has inflated all of it (~1.4 MB of JSONL per 256 KiB, parsed meanwhile):
 * many outlived two young-generation collections and waited in the old generation for a full one, rarely due while
 * the heap stays small — ~45 MB of dead buffers at the DuckDB path's peak RSS (`npm run bench`).
 */
export function gunzipFile(file: string, chunkSize: number): Readable {
  const gunzip = createGunzip({ chunkSize });
  feed(file, gunzip, chunkSize).catch((err: unknown) => gunzip.destroy(err as Error));
  return gunzip;
}

async function feed(file: string, gunzip: Gunzip, readSize: number): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const buffers = [Buffer.allocUnsafe(readSize), Buffer.allocUnsafe(readSize)];
    // A write's callback says zlib is done with its bytes (or the stream is destroyed): then the buffer is free.
    const free: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
    for (let i = 0; ; i ^= 1) {
      await free[i];
      if (gunzip.destroyed) return;
      const buffer = buffers[i]!;
      const { bytesRead } = await fh.read(buffer, 0, readSize, null);
      if (bytesRead === 0) break;
      free[i] = new Promise((resolve) => gunzip.write(buffer.subarray(0, bytesRead), () => resolve()));
    }
    gunzip.end();
  } finally {
    await fh.close();
  }
}
