import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { isBrokenGzip, isGzipFile } from '../../../src/sink-kit/raw-jsonl/gzip.js';
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
