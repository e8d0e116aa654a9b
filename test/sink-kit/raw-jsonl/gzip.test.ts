import { createReadStream } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGunzip, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { gunzipFile, isBrokenGzip, isGzipFile } from '../../../src/sink-kit/raw-jsonl/gzip.js';
import { removeTempDirs, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

const text = '{"a":1}\n{"a":2,"b":"x"}\n\n'.repeat(200);

/** What zlib throws decompressing `bytes`, or undefined. */
async function gunzipError(bytes: Buffer): Promise<unknown> {
  const file = path.join(await tempDir(), 'x.gz');
  await writeFile(file, bytes);
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  return pipeline(createReadStream(file), createGunzip(), sink).then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe('isGzipFile', () => {
  it('sniffs gzip by its magic bytes, whatever the file is called', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'no-extension'), gzipSync(text));
    await writeFile(path.join(dir, 'plain.gz'), text);
    expect(await isGzipFile(path.join(dir, 'no-extension'))).toBe(true);
    expect(await isGzipFile(path.join(dir, 'plain.gz'))).toBe(false);
  });
});

describe('isBrokenGzip', () => {
  it("takes zlib's errors for cut-off and corrupt input by their codes", async () => {
    const good = gzipSync(text);
    const cut = await gunzipError(good.subarray(0, good.length - 10));
    const corrupt = Buffer.from(good);
    corrupt[corrupt.length - 5]! ^= 1; // the checksum no longer matches
    const bad = await gunzipError(corrupt);
    expect(cut).toBeInstanceOf(Error);
    expect(bad).toBeInstanceOf(Error);
    expect(isBrokenGzip(cut)).toBe(true);
    expect(isBrokenGzip(bad)).toBe(true);
    expect(await gunzipError(good)).toBeUndefined();
  });

  it('does not take other failures for broken gzip', () => {
    expect(isBrokenGzip(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }))).toBe(false);
    expect(isBrokenGzip(Object.assign(new Error('zlib out of memory'), { code: 'Z_MEM_ERROR' }))).toBe(false);
    expect(isBrokenGzip(new Error('Z_DATA_ERROR in the message only'))).toBe(false);
    expect(isBrokenGzip(undefined)).toBe(false);
  });
});

/** Every chunk `gunzipFile` gives, joined; or what it threw. */
async function inflated(file: string, chunkSize: number): Promise<Buffer | unknown> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of gunzipFile(file, chunkSize)) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks);
  } catch (err) {
    return err;
  }
}

/** This process's open file descriptors (Linux). */
async function openFds(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

describe('gunzipFile', () => {
  // Lines that do not repeat, so that 2 MB of JSONL take many reads of the compressed file through the same buffers.
  const big = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ i, h: (i * 2654435761) % 2 ** 32 })).join('\n');

  it('inflates the whole file, through its read buffers used again and again, as gunzip does', async () => {
    const file = path.join(await tempDir(), 'big.jsonl.gz');
    const compressed = gzipSync(big, { level: constants.Z_BEST_SPEED });
    await writeFile(file, compressed);
    expect(compressed.length).toBeGreaterThan(40 * 1024); // > 40 reads of 1 KiB
    for (const chunkSize of [1024, 4096, 1 << 18]) {
      const out = await inflated(file, chunkSize);
      expect(Buffer.isBuffer(out)).toBe(true);
      expect((out as Buffer).toString()).toBe(big);
    }
  });

  it("throws zlib's errors for a cut-off or corrupt file, and the file system's for a missing one", async () => {
    const dir = await tempDir();
    const good = gzipSync(big);
    const corrupt = Buffer.from(good);
    corrupt[corrupt.length - 5]! ^= 1;
    await writeFile(path.join(dir, 'cut.gz'), good.subarray(0, good.length >> 1));
    await writeFile(path.join(dir, 'corrupt.gz'), corrupt);
    const cut = await inflated(path.join(dir, 'cut.gz'), 1024);
    const bad = await inflated(path.join(dir, 'corrupt.gz'), 1024);
    expect(isBrokenGzip(cut)).toBe(true);
    expect(isBrokenGzip(bad)).toBe(true);
    expect((await inflated(path.join(dir, 'missing.gz'), 1024)) as NodeJS.ErrnoException).toMatchObject({
      code: 'ENOENT',
    });
  });

  it.runIf(process.platform === 'linux')(
    'closes the file when the reader stops early or the file is broken',
    async () => {
      const dir = await tempDir();
      const good = gzipSync(big);
      await writeFile(path.join(dir, 'good.gz'), good);
      await writeFile(path.join(dir, 'cut.gz'), good.subarray(0, good.length >> 1));
      const before = await openFds();
      for (let i = 0; i < 5; i++) {
        for await (const _ of gunzipFile(path.join(dir, 'good.gz'), 1024)) break;
        await inflated(path.join(dir, 'cut.gz'), 1024);
      }
      await expect.poll(openFds).toBe(before);
    },
  );
});
