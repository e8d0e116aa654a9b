import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { concatFiles } from '../../../sinks/jsonl/copy.js';
import { copyCheckedJsonl } from '../../../src/sink-kit/raw-jsonl/checked-copy.js';
import { BadJsonlLine } from '../../../src/sink-kit/raw-jsonl/line.js';
import { removeTempDirs, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

const text = '{"a":1}\n{"a":2,"b":"x"}\n\n';

describe('copyCheckedJsonl', () => {
  it('copies the bytes as they are when the encoding stays, and counts the records (blank lines skipped)', async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'in.jsonl.gz');
    const compressed = gzipSync(text);
    await writeFile(src, compressed);
    expect(await copyCheckedJsonl(src, path.join(dir, 'out.jsonl.gz'), 6)).toEqual({ records: 2, longest: 15 });
    expect(await readFile(path.join(dir, 'out.jsonl.gz'))).toEqual(compressed);
  });

  it('decompresses or compresses when the encoding changes', async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'in.jsonl');
    await writeFile(src, text);
    expect((await copyCheckedJsonl(src, path.join(dir, 'out.jsonl.gz'), 1)).records).toBe(2);
    expect(gunzipSync(await readFile(path.join(dir, 'out.jsonl.gz'))).toString()).toBe(text);
  });

  it('ends every copy with a newline, as a gzip member of its own when gzip, so copies can be joined', async () => {
    const dir = await tempDir();
    const cut = '{"a":1}\n{"a":2}';
    await writeFile(path.join(dir, 'in.jsonl.gz'), gzipSync(cut));
    expect((await copyCheckedJsonl(path.join(dir, 'in.jsonl.gz'), path.join(dir, 'a.jsonl.gz'), 1)).records).toBe(2);
    const copied = await readFile(path.join(dir, 'a.jsonl.gz'));
    expect(copied.subarray(0, gzipSync(cut).length)).toEqual(gzipSync(cut));
    expect(gunzipSync(copied).toString()).toBe(`${cut}\n`);
    await writeFile(path.join(dir, 'in.jsonl'), cut);
    expect((await copyCheckedJsonl(path.join(dir, 'in.jsonl'), path.join(dir, 'b.jsonl'), undefined)).records).toBe(2);
    expect(await readFile(path.join(dir, 'b.jsonl'), 'utf8')).toBe(`${cut}\n`);

    await concatFiles([path.join(dir, 'a.jsonl.gz'), path.join(dir, 'a.jsonl.gz')], path.join(dir, 'both.jsonl.gz'));
    expect(gunzipSync(await readFile(path.join(dir, 'both.jsonl.gz'))).toString()).toBe(`${cut}\n${cut}\n`);
  });

  it('throws on a line that is not a JSON object, with its byte offset', async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'x.jsonl');
    await writeFile(src, '{"a":1}\n"just a string"\n');
    const err = await copyCheckedJsonl(src, path.join(dir, 'out.jsonl'), undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadJsonlLine);
    expect((err as Error).message).toMatch(/line at byte 8 is not a JSON object/);
  });
});
