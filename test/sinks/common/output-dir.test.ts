import { mkdir, readFile, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutputDir, type OutputDirOptions } from '../../../sinks/common/output-dir.js';
import { removeTempDirs, sinkContext, tempDir } from '../helpers.js';

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
  it('deletes files named by a commit marker that the manifest never recorded, and keeps committed ones', async () => {
    const root = path.join(await tempDir(), 'out');
    const out = await OutputDir.open(options(root));
    const tmp = out.tempPath('a');
    await writeFile(tmp, '{"x":1}\n');
    await out.commit({
      moves: [{ from: tmp, to: 'a.jsonl' }],
      apply: (m) => void (m.units.a = { records: 1, files: ['a.jsonl'], committed_at: '' }),
    });
    // What a crash between the rename and the manifest leaves: the file in place and its marker.
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
});
