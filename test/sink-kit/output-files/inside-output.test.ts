/**
 * The resolver every name read from sluice's own files goes through (src/sink-kit/output-files/inside-output.ts): each way a
 * name can leave the output refused with the file it came from, names inside taken, on real directories and links.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../../src/core/errors.js';
import {
  entryName,
  insidePath,
  keyOf,
  keyUnder,
  relativeName,
  UnsafeNameError,
} from '../../../src/sink-kit/output-files/inside-output.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const src = { file: '/out/_sluice_manifest.json', entry: 'unit "u" files[0]' };

/** What the resolver says of `fn`'s name: its message, or 'taken'. */
async function verdict(fn: () => unknown): Promise<string> {
  try {
    await fn();
    return 'taken';
  } catch (err) {
    expect(err).toBeInstanceOf(UnsafeNameError);
    expect((err as UnsafeNameError).exitCode).toBe(EXIT_CODES.config);
    expect((err as UnsafeNameError).hint).toMatch(/restore .* or remove it/);
    return (err as Error).message;
  }
}

describe('names checked as written (local and S3 alike)', () => {
  const refused: [unknown, RegExp][] = [
    ['../victim.txt', /climbs out with `\.\.`/],
    ['a/../../victim.txt', /climbs out/],
    ['..', /climbs out/],
    ['/etc/passwd', /an absolute path/],
    ['a\\..\\..\\victim.txt', /a backslash/],
    ['part-1.jsonl\0.txt', /a NUL byte/],
    ['', /an empty name/],
    ['.', /empty or `\.` segment/],
    ['a//b', /empty or `\.` segment/],
    ['a/./b', /empty or `\.` segment/],
    ['a/', /empty or `\.` segment/],
    [42, /names a number, not a name/],
    [null, /names a null, not a name/],
  ];
  for (const [name, why] of refused)
    it(`refuses ${JSON.stringify(name)}, naming the file it came from`, async () => {
      const message = await verdict(() => relativeName(name, src));
      expect(message).toMatch(why);
      expect(message).toContain('/out/_sluice_manifest.json: unit "u" files[0] names');
    });

  it('takes names inside: data files, partition directories, names that only start with dots', () => {
    for (const name of ['part-1.jsonl', 'country=US/part-1.parquet', 'a=..b/..c', '.sluice-staged/x.staged'])
      expect(relativeName(name, src)).toBe(name);
  });

  it('a generation is one entry', async () => {
    expect(entryName('gen-20261129-abc', src)).toBe('gen-20261129-abc');
    expect(await verdict(() => entryName('gen/../..', src))).toMatch(/climbs out/);
    expect(await verdict(() => entryName('a/b', src))).toMatch(/one directory entry/);
  });

  it('S3 keys: under the prefix, relative names only', async () => {
    expect(keyUnder('.sluice-tmp/', '.sluice-tmp/c1/0.tmp', src)).toBe('c1/0.tmp');
    expect(keyOf('.sluice-generations/g1/', 'part-1.jsonl', src)).toBe('.sluice-generations/g1/part-1.jsonl');
    expect(await verdict(() => keyUnder('.sluice-tmp/', 'elsewhere/0.tmp', src))).toMatch(
      /a key outside \.sluice-tmp\//,
    );
    expect(await verdict(() => keyUnder('', '../other-prefix/x', src))).toMatch(/climbs out/);
    expect(await verdict(() => keyOf('', '/x', src))).toMatch(/an absolute path/);
  });
});

describe('names resolved on disk (local)', () => {
  const base = mkdtempSync(path.join(tmpdir(), 'sluice-inside-'));
  dirs.push(base);
  const out = path.join(base, 'out');
  const outside = path.join(base, 'outside');
  mkdirSync(path.join(out, 'country=US'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'victim.txt'), 'keep me');
  writeFileSync(path.join(out, 'country=US', 'part-1.jsonl'), '{}\n');
  symlinkSync(outside, path.join(out, 'linked'));
  symlinkSync(path.join(outside, 'victim.txt'), path.join(out, 'part-link.jsonl'));
  symlinkSync(out, path.join(out, 'self'));
  symlinkSync(path.join(out, 'country=US'), path.join(out, 'inner'));

  it('takes files inside, there or not yet, and returns the path as joined (links acted on, not followed)', async () => {
    expect(await insidePath(out, 'country=US/part-1.jsonl', src)).toBe(path.join(out, 'country=US/part-1.jsonl'));
    expect(await insidePath(out, 'country=DE/part-2.jsonl', src)).toBe(path.join(out, 'country=DE/part-2.jsonl'));
    expect(await insidePath(out, 'inner/part-1.jsonl', src)).toBe(path.join(out, 'inner/part-1.jsonl'));
  });

  it('refuses a name a symbolic link leads out of the output: a linked directory, a linked file, the root', async () => {
    expect(await verdict(() => insidePath(out, 'linked/victim.txt', src))).toMatch(
      new RegExp(`a symbolic link under .* leads to ${path.join(outside, 'victim.txt')}, outside it`),
    );
    expect(await verdict(() => insidePath(out, 'linked/not-there-yet.txt', src))).toMatch(/leads to .*outside/);
    expect(await verdict(() => insidePath(out, 'part-link.jsonl', src))).toMatch(/leads to .*victim\.txt, outside/);
    expect(await verdict(() => insidePath(out, 'self', src))).toMatch(/a link to the output directory .* itself/);
  });

  it('checks names as written first', async () => {
    expect(await verdict(() => insidePath(out, '../outside/victim.txt', src))).toMatch(/climbs out/);
    expect(await verdict(() => insidePath(out, path.join(outside, 'victim.txt'), src))).toMatch(/absolute path/);
  });
});
