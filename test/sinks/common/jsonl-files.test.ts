import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { copyCheckedJsonl, isGzipFile } from '../../../sinks/common/jsonl-files.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

const text = '{"a":1}\n{"a":2,"b":"x"}\n\n';

describe('isGzipFile', () => {
  it('sniffs gzip by its magic bytes, whatever the file is called', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'no-extension'), gzipSync(text));
    await writeFile(path.join(dir, 'plain.gz'), text);
    expect(await isGzipFile(path.join(dir, 'no-extension'))).toBe(true);
    expect(await isGzipFile(path.join(dir, 'plain.gz'))).toBe(false);
  });
});

describe('copyCheckedJsonl', () => {
  it('copies the bytes as they are when the encoding stays, and counts the records (blank lines skipped)', async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'in.jsonl.gz');
    const compressed = gzipSync(text);
    await writeFile(src, compressed);
    expect(await copyCheckedJsonl(src, path.join(dir, 'out.jsonl.gz'), 6)).toBe(2);
    expect(await readFile(path.join(dir, 'out.jsonl.gz'))).toEqual(compressed);
  });

  it('decompresses or compresses when the encoding changes', async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'in.jsonl');
    await writeFile(src, text);
    expect(await copyCheckedJsonl(src, path.join(dir, 'out.jsonl.gz'), 1)).toBe(2);
    expect(gunzipSync(await readFile(path.join(dir, 'out.jsonl.gz'))).toString()).toBe(text);
  });

  it('throws on a line that is not a JSON object, with its byte offset', async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'x.jsonl');
    await writeFile(src, '{"a":1}\n"just a string"\n');
    await expect(copyCheckedJsonl(src, path.join(dir, 'out.jsonl'), undefined)).rejects.toThrow(
      /line at byte 8 is not a JSON object/,
    );
  });
});
