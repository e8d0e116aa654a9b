import { lstat, mkdir, readFile, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CommitIncompleteError,
  OutputDir,
  outputLockPath,
  type OutputDirOptions,
} from '../../../src/sink-kit/output-files/output-dir.js';
import { SluiceError } from '../../../src/core/errors.js';
import { removeTempDirs, sinkContext, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

function options(root: string, over: Partial<OutputDirOptions> = {}): OutputDirOptions {
  return {
    root,
    mode: 'append',
    fresh: true,
    pipeline: 'p',
    format: 'jsonl',
    label: 'test sink',
    log: sinkContext(root).log,
    ...over,
  };
}

describe('OutputDir', () => {
  it('deletes files an earlier version renamed into place before its manifest, and keeps committed ones', async () => {
    const root = path.join(await tempDir(), 'out');
    const out = await OutputDir.open(options(root));
    const tmp = out.tempPath('a');
    await writeFile(tmp, '{"x":1}\n');
    await out.commit({
      moves: [{ from: tmp, to: 'a.jsonl' }],
      apply: (m) => void (m.units.a = { records: 1, files: ['a.jsonl'], committed_at: '' }),
    });
    // What a crash between the rename and the manifest left when files were renamed first (sluice before
    // 2026-11-23): the file in place and a marker listing final names.
    await writeFile(path.join(root, 'b.jsonl'), '{"x":2}\n');
    await writeFile(
      path.join(root, '.sluice-tmp', 'commit.1.pending'),
      JSON.stringify({ files: ['b.jsonl', 'a.jsonl'] }),
    );
    await writeFile(path.join(root, 'users-own.jsonl'), 'not ours');
    const again = await OutputDir.open(options(root, { fresh: false }));
    expect((await readdir(root)).sort()).toEqual([
      '.sluice-tmp',
      '_sluice_manifest.json',
      'a.jsonl',
      'users-own.jsonl',
    ]);
    expect(again.committedUnits()).toEqual(new Set(['a']));
  });

  it('completes a recorded commit cut off half-way through its renames, and drops one cut off before the manifest', async () => {
    const root = path.join(await tempDir(), 'out');
    const out = await OutputDir.open(options(root));
    const tmp = (name: string): string => path.join(root, '.sluice-tmp', name);
    // Recorded: two files, the first already renamed into place when the process died.
    await writeFile(path.join(root, 'a1.jsonl'), '{"x":1}\n');
    await writeFile(tmp('a2.tmp'), '{"x":2}\n');
    await out.commit({
      moves: [],
      apply: (m) => void (m.units.a = { records: 2, files: ['a1.jsonl', 'a2.jsonl'], committed_at: '' }),
    });
    await writeFile(
      tmp('commit.1.pending'),
      JSON.stringify({
        moves: [
          { from: tmp('a1.tmp'), to: 'a1.jsonl' },
          { from: tmp('a2.tmp'), to: 'a2.jsonl' },
        ],
      }),
    );
    // Not recorded: the manifest never got it, so its temp file must not appear.
    await writeFile(tmp('b.tmp'), '{"x":3}\n');
    await writeFile(tmp('commit.2.pending'), JSON.stringify({ moves: [{ from: tmp('b.tmp'), to: 'b.jsonl' }] }));
    // A marker torn by the crash.
    await writeFile(tmp('commit.3.pending'), '{"moves": [');

    const ctx = sinkContext(root);
    const again = await OutputDir.open(options(root, { fresh: false, log: ctx.log }));
    expect((await readdir(root)).sort()).toEqual(['.sluice-tmp', '_sluice_manifest.json', 'a1.jsonl', 'a2.jsonl']);
    expect(await readFile(path.join(root, 'a2.jsonl'), 'utf8')).toBe('{"x":2}\n');
    expect(await readdir(path.join(root, '.sluice-tmp'))).toEqual([]);
    expect(again.committedUnits()).toEqual(new Set(['a']));
    expect(ctx.logs).toEqual([
      'warn: test sink: completed a commit a crash interrupted: moved 1 committed file(s) into place',
    ]);
  });

  it('a manifest that cannot be written keeps the commit for the next open to settle and takes no more commits', async () => {
    const root = path.join(await tempDir(), 'out');
    const out = await OutputDir.open(options(root));
    const manifestPath = path.join(root, '_sluice_manifest.json');
    await rm(manifestPath, { force: true });
    await mkdir(manifestPath); // renaming the new manifest over a directory fails
    const file = (name: string): Promise<string> => {
      const tmp = out.tempPath(name);
      return writeFile(tmp, '{"x":1}\n').then(() => tmp);
    };
    const commitA = out.commit({
      moves: [{ from: await file('a'), to: 'a.jsonl' }],
      apply: (m) => void (m.units.a = { records: 1, files: ['a.jsonl'], committed_at: '' }),
    });
    await expect(commitA).rejects.toThrow(CommitIncompleteError);
    await expect(commitA).rejects.toThrow(/could not write the manifest/);
    await expect(
      out.commit({ moves: [], apply: (m) => void (m.units.b = { records: 0, files: [], committed_at: '' }) }),
    ).rejects.toThrow(/an earlier commit is unsettled/);
    expect((await readdir(path.join(root, '.sluice-tmp'))).some((f) => f.endsWith('.pending'))).toBe(true);

    await rm(manifestPath, { recursive: true });
    const again = await OutputDir.open(options(root, { fresh: false }));
    // The manifest never recorded it: nothing appears, nothing is left behind.
    expect((await readdir(root)).filter((f) => f.endsWith('.jsonl'))).toEqual([]);
    expect(await readdir(path.join(root, '.sluice-tmp'))).toEqual([]);
    expect(again.committedUnits()).toEqual(new Set());
  });

  it('replace: a crash after the swap but before NEXT was removed does not delete the live generation', async () => {
    const base = await tempDir();
    const root = path.join(base, 'out');
    const first = await OutputDir.open(options(root, { mode: 'replace' }));
    await writeFile(path.join(first.dataDir, 'x.jsonl'), '{}\n');
    await first.finish();
    const live = await readlink(root);
    // Simulate the crash: NEXT still names the generation that is now live.
    await writeFile(path.join(base, '.out.sluice-generations', 'NEXT'), `${path.basename(live)}\n`);
    const next = await OutputDir.open(options(root, { mode: 'replace', fresh: true }));
    expect(next.dataDir).not.toBe(path.join(base, live));
    expect(await readFile(path.join(root, 'x.jsonl'), 'utf8')).toBe('{}\n');
  });

  it('replace: swapping over a symlink that points elsewhere leaves its target alone', async () => {
    const base = await tempDir();
    await mkdir(path.join(base, 'elsewhere'));
    await writeFile(path.join(base, 'elsewhere', 'keep.jsonl'), '{}\n');
    await symlink('elsewhere', path.join(base, 'out'));
    const out = await OutputDir.open(options(path.join(base, 'out'), { mode: 'replace' }));
    await out.finish();
    expect(await readdir(path.join(base, 'elsewhere'))).toEqual(['keep.jsonl']);
    expect(await readlink(path.join(base, 'out'))).toMatch(/^\.out\.sluice-generations\/gen-/);
  });

  it('drop of a replace output: the link first, then every generation; the lock stays; the next run starts over', async () => {
    const base = await tempDir();
    const root = path.join(base, 'out');
    const genRoot = path.join(base, '.out.sluice-generations');
    const first = await OutputDir.open(options(root, { mode: 'replace' }));
    const tmp = first.tempPath('a');
    await writeFile(tmp, '{"x":1}\n');
    await first.commit({
      moves: [{ from: tmp, to: 'a.jsonl' }],
      apply: (m) => void (m.units.a = { records: 1, files: ['a.jsonl'], committed_at: '' }),
    });
    await first.finish();
    const live = path.basename(await readlink(root));
    await writeFile(outputLockPath(root, 'replace'), '{"pid":1}\n');
    // As `sluice state drop` opens the output: as a run does, which begins (or continues) the next generation.
    const out = await OutputDir.open(options(root, { mode: 'replace', fresh: false }));
    expect(out.dataDir).not.toBe(path.join(genRoot, live));
    expect(await out.drop()).toEqual([`the live generation ${live} of ${root}`, `2 generation(s) under ${genRoot}`]);
    await expect(lstat(root)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(genRoot)).toEqual(['.sluice-lock']);
    expect(out.committedUnits()).toEqual(new Set());
    const next = await OutputDir.open(options(root, { mode: 'replace', fresh: false }));
    expect(next.committedUnits()).toEqual(new Set());
    await next.finish();
    expect(await readlink(root)).toMatch(/^\.out\.sluice-generations\/gen-/);
  });

  it('run lock: in the directory for append, beside the generations for replace, where swaps leave it alone', async () => {
    const base = await tempDir();
    const root = path.join(base, 'out');
    expect(outputLockPath(root, 'append')).toBe(path.join(root, '.sluice-lock'));
    const lock = outputLockPath(root, 'replace');
    expect(lock).toBe(path.join(base, '.out.sluice-generations', '.sluice-lock'));
    await mkdir(path.dirname(lock), { recursive: true });
    await writeFile(lock, '{"pid":1}\n');
    const first = await OutputDir.open(options(root, { mode: 'replace' }));
    await first.finish();
    // A second generation: opening removes leftovers beside the generations, and the swap removes the old one.
    const second = await OutputDir.open(options(root, { mode: 'replace', fresh: true }));
    await second.finish();
    expect(await readFile(lock, 'utf8')).toBe('{"pid":1}\n');
    expect(await readdir(path.join(base, 'out'))).not.toContain('.sluice-lock');
  });
});

describe('OutputDir: shards in one directory', () => {
  const shard = (index: number) => ({ shard: { index, count: 2 }, fresh: false });

  /** Commits unit `id` as file `<name>` through `out`. */
  async function commitFile(out: OutputDir, id: string, name: string): Promise<void> {
    const tmp = out.tempPath(id);
    await writeFile(tmp, `{"id":"${id}"}\n`);
    await out.commit({
      moves: [{ from: tmp, to: name }],
      apply: (m) => void (m.units[id] = { records: 1, files: [name], committed_at: '' }),
    });
  }

  it('each shard commits to its own manifest beside the others, data files flat; no open touches another shard’s temp files', async () => {
    const root = path.join(await tempDir(), 'out');
    const [a, b] = await Promise.all([
      OutputDir.open(options(root, shard(0))),
      OutputDir.open(options(root, shard(1))),
    ]);
    expect(a.tmpDir).toBe(path.join(root, '.sluice-tmp', 'shard-0-of-2'));
    expect(a.stagedRel).toBe('.sluice-staged/shard-0-of-2');
    expect(b.fileTag).toBe('shard-1-of-2-');
    await Promise.all([
      commitFile(a, 'u0', 'country=US/part-shard-0-of-2-x.jsonl'),
      commitFile(b, 'u1', 'country=US/part-shard-1-of-2-x.jsonl'),
    ]);
    // A commit of shard 0 cut off before its manifest, while shard 1 reopens and an unsharded run opens.
    const crashed = a.tempPath('crashed');
    await writeFile(crashed, 'partial');
    await mkdir(path.join(root, '.sluice-staged', 'shard-0-of-2'), { recursive: true });
    await writeFile(path.join(root, '.sluice-staged', 'shard-0-of-2', 'x.staged'), 'orphan');
    const b2 = await OutputDir.open(options(root, shard(1)));
    await OutputDir.open(options(root, { fresh: false }));
    expect(await readdir(a.tmpDir)).toEqual([path.basename(crashed)]);
    expect(b2.committedUnits()).toEqual(new Set(['u1']));

    expect((await readdir(root)).sort()).toEqual([
      '.sluice-staged',
      '.sluice-tmp',
      '_sluice_manifest.shard-0-of-2.json',
      '_sluice_manifest.shard-1-of-2.json',
      'country=US',
    ]);
    expect((await readdir(path.join(root, 'country=US'))).sort()).toEqual([
      'part-shard-0-of-2-x.jsonl',
      'part-shard-1-of-2-x.jsonl',
    ]);
    // Shard 0's own next open removes its leftovers.
    const a2 = await OutputDir.open(options(root, shard(0)));
    expect(a2.committedUnits()).toEqual(new Set(['u0']));
    expect(await readdir(a.tmpDir)).toEqual([]);
    expect(await readdir(path.join(root, '.sluice-staged', 'shard-0-of-2'))).toEqual([]);
    expect(outputLockPath(root, 'append', { index: 0, count: 2 })).toBe(path.join(root, '.sluice-lock.shard-0-of-2'));
  });

  it('write: replace with a shard is refused before anything is written, saying what to do instead', async () => {
    const root = path.join(await tempDir(), 'out');
    const err = await OutputDir.open(options(root, { mode: 'replace', ...shard(0) })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/`write: replace` does not work with shards/);
    expect((err as SluiceError).hint).toMatch(/write: append/);
    await expect(readdir(root)).rejects.toThrow(/ENOENT/);
  });
});
