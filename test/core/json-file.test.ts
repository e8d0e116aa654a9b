import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJsonFile } from '../../src/core/json-file.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sluice-json-file-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const named = {
  unreadable: (err: NodeJS.ErrnoException) => new Error(`unreadable ${err.code}`),
  invalid: () => new Error('invalid'),
};

describe('readJsonFile', () => {
  it('the value of a JSON file; an absent one is none only when the caller says so', async () => {
    await writeFile(path.join(dir, 'ok.json'), '{"a":[1]}');
    expect(await readJsonFile(path.join(dir, 'ok.json'), named)).toEqual({ a: [1] });
    expect(await readJsonFile(path.join(dir, 'none.json'), { ...named, absentIsNone: true })).toBeUndefined();
    await expect(readJsonFile(path.join(dir, 'none.json'), named)).rejects.toThrow('unreadable ENOENT');
  });

  it("a file that cannot be read, or is not JSON, is the caller's error (or none, when it says so)", async () => {
    await expect(readJsonFile(dir, named)).rejects.toThrow('unreadable EISDIR');
    await writeFile(path.join(dir, 'half.json'), '{"a":');
    await expect(readJsonFile(path.join(dir, 'half.json'), named)).rejects.toThrow('invalid');
    expect(await readJsonFile(path.join(dir, 'half.json'), { ...named, invalid: () => undefined })).toBeUndefined();
  });
});
