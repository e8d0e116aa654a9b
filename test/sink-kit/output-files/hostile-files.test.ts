/**
 * A local output whose own files someone else changed (src/sink-kit/output-files/inside-output.ts): a commit marker or a
 * manifest naming files outside, links leading out of it, a generation pointer climbing out. Every command that
 * opens the output — run, `state drop`, `compact`, a dead-letter replay, and `finalize` for a sharded set — refuses
 * with exit 2, naming the file, and touches nothing outside. S3: hostile-files-s3.test.ts.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, COMMANDS, expectRefused, removeScenes, scene, SECRET, untouched, type Scene } from './hostile-scene.js';

afterAll(removeScenes);

describe('a hostile commit marker: every command refuses it and touches nothing outside', () => {
  for (const [command, args] of Object.entries(COMMANDS))
    it(command, async () => {
      const s = await scene({ sharded: command === 'finalize' });
      // As a crash of sluice before 2026-11-23 left them: files to remove unless the manifest names them.
      await s.writeMarker('commit.old.pending', { files: ['../victim.txt'] });
      // As a commit recorded and not completed: its moves into place, then the files it replaced removed.
      const tmp = path.join(s.root, '.sluice-tmp', ...(s.shard ? [s.shard] : []));
      await s.writeMarker('commit.new.pending', {
        moves: [{ from: path.join(tmp, 'gone.tmp'), to: await s.committedFile() }],
        removes: ['../victim2.txt', path.join(s.dir, 'victimdir', 'keep.txt')],
      });
      await expectRefused(s, await cli(...args(s.file)), s.markerAt('commit.'));
    });

  it('a marker moving a file from outside the temp area into the output', async () => {
    const s = await scene({});
    await s.writeMarker('commit.in.pending', {
      moves: [{ from: path.join(s.dir, 'victim.txt'), to: await s.committedFile() }],
    });
    const r = await cli(...COMMANDS.run!(s.file));
    await expectRefused(s, r, s.markerAt('commit.in.pending'));
    expect(r.err).toContain(`not a file under ${path.join(s.root, '.sluice-tmp')}/`);
  });
});

describe('a hostile manifest: every command refuses it and touches nothing outside', () => {
  for (const [command, args] of Object.entries(COMMANDS))
    it(command, async () => {
      const s = await scene({ sharded: command === 'finalize' });
      await s.editManifest((m) => Object.values(m.units)[0]!.files.push('../victim.txt', '../victim2.txt'));
      await expectRefused(s, await cli(...args(s.file)), s.manifestAt);
    });
});

describe('sluice state drop of a manifest naming paths outside', () => {
  const cases: [string, (s: Scene) => string[], RegExp][] = [
    ['an absolute path', (s) => [path.join(s.dir, 'victim.txt')], /an absolute path/],
    ['a `..` path', () => ['../victim.txt'], /climbs out with `\.\.`/],
    ['a file in an outside folder it would leave empty', () => ['../emptydir/part-x.jsonl'], /climbs out/],
    ['a file behind a link to an outside folder', () => ['linked/keep.txt'], /a symbolic link .* leads to .*victimdir/],
  ];
  for (const [what, names, why] of cases)
    it(`refuses ${what} (exit 2, a clear error), the output and the outside as they were`, async () => {
      const s = await scene({});
      symlinkSync(path.join(s.dir, 'victimdir'), path.join(s.root, 'linked'));
      const before = await s.dataFiles();
      await s.editManifest((m) => Object.values(m.units)[0]!.files.push(...names(s)));
      const r = await cli(...COMMANDS['state drop']!(s.file));
      await expectRefused(s, r, s.manifestAt);
      expect(r.err).toMatch(why);
      // Nothing dropped: the manifest and every data file still there.
      expect(existsSync(s.manifestAt)).toBe(true);
      expect(await s.dataFiles()).toEqual(before);
    });
});

describe('links inside the output that lead out of it', () => {
  it('run: a temp area linked to an outside folder is refused, not emptied', async () => {
    const s = await scene({});
    rmSync(path.join(s.root, '.sluice-tmp'), { recursive: true });
    symlinkSync(path.join(s.dir, 'victimdir'), path.join(s.root, '.sluice-tmp'));
    const r = await cli(...COMMANDS.run!(s.file));
    await expectRefused(s, r, s.root);
    expect(r.err).toMatch(
      /its temp or staging area names "\.sluice-tmp", which a symbolic link .* leads to .*victimdir/,
    );
  });

  it('compact: a data file that is a link to a file outside is refused, not read into the output', async () => {
    const s = await scene({});
    const name = await s.committedFile();
    renameSync(path.join(s.root, name), path.join(s.dir, 'moved-aside'));
    symlinkSync(path.join(s.dir, 'victim.txt'), path.join(s.root, name));
    const r = await cli(...COMMANDS.compact!(s.file));
    await expectRefused(s, r, s.manifestAt);
    // The link stays; no file of the output took the outside file's content.
    for (const f of (await s.dataFiles()).filter((f) => f !== name))
      expect(readFileSync(path.join(s.root, f), 'utf8')).not.toContain(SECRET);
  });
});

describe('write: replace with a generation pointer climbing out', () => {
  it('a NEXT naming a folder outside: the run refuses, writing nothing there', async () => {
    const s = await scene({ write: 'replace' });
    const genRoot = path.join(s.dir, '.out.sluice-generations');
    writeFileSync(path.join(genRoot, 'NEXT'), '../victimdir\n');
    writeFileSync(path.join(s.dir, 'in', 'c.jsonl'), '{"id":5}\n');
    for (const fresh of [[], ['--fresh']]) {
      const r = await cli(...COMMANDS.run!(s.file), ...fresh);
      await expectRefused(s, r, path.join(genRoot, 'NEXT'));
      expect(readdirSync(path.join(s.dir, 'victimdir'))).toEqual(['keep.txt']);
    }
  });

  it('a generations directory linked to an outside folder is refused, not cleared', async () => {
    const s = await scene({ write: 'replace' });
    const genRoot = path.join(s.dir, '.out.sluice-generations');
    // The live generation moved into the outside folder, the generations directory a link to it.
    mkdirSync(path.join(s.dir, 'elsewhere'));
    for (const name of readdirSync(genRoot)) renameSync(path.join(genRoot, name), path.join(s.dir, 'elsewhere', name));
    writeFileSync(path.join(s.dir, 'elsewhere', 'keep.txt'), SECRET);
    rmSync(genRoot, { recursive: true });
    symlinkSync(path.join(s.dir, 'elsewhere'), genRoot);
    const r = await cli(...COMMANDS.run!(s.file));
    await expectRefused(s, r, s.dir);
    expect(r.err).toMatch(
      /the generations directory names "\.out\.sluice-generations", a symbolic link \(to .*elsewhere\) where sluice keeps a directory of its own/,
    );
    expect(readFileSync(path.join(s.dir, 'elsewhere', 'keep.txt'), 'utf8')).toBe(SECRET);
    untouched(s, await s.outside());
  });
});

describe('a prepared record beside the output that is not sluice’s', () => {
  const record = {
    id: 'x',
    pipeline: 'hostile',
    preparedAt: '2999-01-01T00:00:00Z',
    paidJobs: [],
    units: 0,
    state: {},
  };

  it('a shard count that is not a count: finalize refuses it (exit 2), writing no record', async () => {
    const s = await scene({ sharded: true });
    writeFileSync(path.join(s.root, '.sluice-prepared.json'), JSON.stringify({ ...record, shards: '../../x' }));
    const r = await cli(...COMMANDS.finalize!(s.file));
    expect(r.code, r.err).toBe(2);
    expect(r.err).toContain(
      `${path.join(s.root, '.sluice-prepared.json')}: shards "../../x" is not a number of shards`,
    );
    expect(existsSync(path.join(s.root, '_sluice_shards.json'))).toBe(false);
  });

  it('a link to a record outside: refused, not followed', async () => {
    const s = await scene({ sharded: true });
    writeFileSync(path.join(s.dir, 'record.json'), JSON.stringify({ ...record, shards: 2 }));
    rmSync(path.join(s.root, '.sluice-prepared.json'));
    symlinkSync(path.join(s.dir, 'record.json'), path.join(s.root, '.sluice-prepared.json'));
    await expectRefused(s, await cli(...COMMANDS.finalize!(s.file)), path.join(s.root, '.sluice-prepared.json'));
  });
});
