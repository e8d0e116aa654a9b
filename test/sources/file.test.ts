/**
 * The file source's incremental plan (which files a run loads, given the fingerprints earlier runs committed), and
 * what a folder may hold that must not be read as more than it is: names like patterns, links out of the folder.
 */
import { mkdirSync, readFileSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { SluiceError } from '../../src/core/errors.js';
import type { Source, WorkUnit } from '../../src/core/types.js';
import { fileSchema, fileSource } from '../../src/sources/file.js';
import { recordingLogger, sourceContext, tempDir } from '../support/in-memory.js';
import { readUnit } from '../support/read-unit.js';
import { memoryIo } from '../cli/memory-io.js';
import { query } from '../sinks/helpers.js';

function setup(extra: Record<string, unknown> = {}): { dir: string; source: Source } {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'in'));
  return setupIn(dir, extra);
}

/** A file source over `<dir>/in`. */
function setupIn(dir: string, extra: Record<string, unknown> = {}): { dir: string; source: Source } {
  const cfg = fileSchema.parse({ type: 'file', paths: ['in'], format: 'jsonl', ...extra });
  const source = fileSource.create(cfg, { log: recordingLogger(), baseDir: dir, client: () => Promise.reject() });
  return { dir, source };
}

function put(dir: string, name: string, text: string, mtime: number): void {
  const file = path.join(dir, 'in', name);
  writeFileSync(file, text);
  utimesSync(file, mtime, mtime);
}

/** The checkpoint a unit's read ends with, which the sinks commit with its rows. */
const checkpointOf = async (source: Source, u: WorkUnit): Promise<unknown> =>
  (await readUnit(source, u, sourceContext())).end.checkpoint;

/** What a run that committed `units` hands the next plan (by source unit id). */
const committed = async (source: Source, units: WorkUnit[]): Promise<Map<string, unknown>> =>
  new Map(await Promise.all(units.map(async (u) => [u.id, await checkpointOf(source, u)] as const)));

const names = (units: WorkUnit[]): string[] => units.map((u) => path.basename(u.params.path as string));

describe('file source, incremental', () => {
  it('plans only files not loaded before or changed since; a touched file with the same bytes is not one', async () => {
    const { dir, source } = setup();
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    put(dir, 'b.jsonl', '{"id":2}\n', 1_700_000_000);
    put(dir, 'c.jsonl', '{"id":3}\n', 1_700_000_000);
    const first = await source.plan(sourceContext({ checkpoints: new Map() }));
    expect(names(first)).toEqual(['a.jsonl', 'b.jsonl', 'c.jsonl']);
    expect(await checkpointOf(source, first[0]!)).toEqual({
      path: path.join('in', 'a.jsonl'),
      size: 9,
      mtimeMs: 1_700_000_000_000,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The raw file hands over the same checkpoint as the read (the fast path commits it).
    const raw = await source.rawFile!(first[1]!, sourceContext(), dir);
    expect(raw.checkpoint).toEqual(await checkpointOf(source, first[1]!));
    const firstRun = await committed(source, first);

    put(dir, 'b.jsonl', '{"id":9}\n', 1_700_000_100); // same size, new bytes
    put(dir, 'c.jsonl', '{"id":3}\n', 1_700_000_100); // touched only
    put(dir, 'd.jsonl', '{"id":4}\n', 1_700_000_100); // new
    const ctx = sourceContext({ checkpoints: firstRun });
    const second = await source.plan(ctx);
    expect(names(second)).toEqual(['b.jsonl', 'd.jsonl']);
    // A changed file is a new unit: its id is not the one committed before.
    expect(second[0]!.id).not.toBe(first[1]!.id);
    expect((ctx.log as ReturnType<typeof recordingLogger>).lines).toContain(
      'info: 2 file(s) loaded before and unchanged since: skipped',
    );

    // Older runs first: the newest fingerprint of b decides.
    const both = new Map([...firstRun, ...(await committed(source, second))]);
    expect(await source.plan(sourceContext({ checkpoints: both }))).toEqual([]);
  });

  it('a file is fingerprinted as its unit starts: rewritten before, it is loaded as it is then; after, again', async () => {
    const { dir, source } = setup();
    put(dir, 'e.jsonl', '{"id":1}\n', 1_700_000_000);
    const [planned] = await source.plan(sourceContext({ checkpoints: new Map() }));
    // Rewritten between the plan and the unit's start (same size): the unit loads the new bytes, and its
    // fingerprint is theirs, so the next run, which finds those bytes, has nothing to load.
    put(dir, 'e.jsonl', '{"id":2}\n', 1_700_000_100);
    const read = await readUnit(source, planned!, sourceContext());
    expect(read.rows).toEqual([{ id: 2 }]);
    const loaded = new Map([[planned!.id, read.end.checkpoint]]);
    expect(await source.plan(sourceContext({ checkpoints: loaded }))).toEqual([]);
    // Rewritten once the unit started (its fingerprint taken): the next run loads it again.
    const [next] = await source.plan(sourceContext({ checkpoints: new Map() }));
    const started = await source.rawFile!(next!, sourceContext(), dir);
    put(dir, 'e.jsonl', '{"id":3}\n', 1_700_000_200);
    const again = await source.plan(sourceContext({ checkpoints: new Map([[next!.id, started.checkpoint]]) }));
    expect(names(again)).toEqual(['e.jsonl']);
  });

  it('with `incremental: false` plans every file and keeps no cursor', async () => {
    const { dir, source } = setup({ incremental: false });
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    expect(source.incremental).toBe(false);
    const units = await source.plan(sourceContext({ checkpoints: new Map([['x', { path: 'in/a.jsonl' }]]) }));
    expect(names(units)).toEqual(['a.jsonl']);
    expect((await readUnit(source, units[0]!, sourceContext())).end.checkpoint).toBeUndefined();
  });
});

describe('file source, what a folder holds', () => {
  it('file names that look like patterns load once each through DuckDB’s fast path; hidden files not at all', async () => {
    const { dir } = setup();
    // 8 records in the visible files. Read as patterns, `*` alone would load every file, `.hidden.jsonl` included.
    const files: Record<string, number> = {
      '*.jsonl': 1,
      '?.jsonl': 1,
      '[ab].jsonl': 1,
      '*': 1,
      'a.jsonl': 2,
      'b.jsonl': 2,
    };
    for (const [name, n] of Object.entries(files))
      writeFileSync(
        path.join(dir, 'in', name),
        Array.from({ length: n }, (_, i) => `{"f":"${name}","i":${i}}\n`).join(''),
      );
    writeFileSync(path.join(dir, 'in', '.hidden.jsonl'), '{"f":"hidden","i":0}\n{"f":"hidden","i":1}\n');
    writeFileSync(
      path.join(dir, 'p.yaml'),
      'version: 1\nname: globs\nsource: { type: file, paths: [in], format: jsonl }\n' +
        'sink: { type: duckdb, path: w.duckdb, table: t }\n',
    );
    const io = memoryIo({});
    expect(await runCli(['run', path.join(dir, 'p.yaml'), '--no-progress', '--quiet'], io), io.stderr.join('\n')).toBe(
      0,
    );
    const rows = await query('SELECT f, count(*)::INT AS n FROM t GROUP BY f ORDER BY f', path.join(dir, 'w.duckdb'));
    expect(rows).toEqual(
      Object.entries(files)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([f, n]) => ({ f, n })),
    );
    // Every file went through the fast path: none was refused and decoded in JS instead.
    expect(io.stdout.join('\n')).not.toMatch(/JS fallbacks/);
  });

  it('a link out of the folder is skipped with a warning, unless follow_symlinks; a link inside is read', async () => {
    const { dir, source } = setup();
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    writeFileSync(path.join(dir, 'secret.txt'), 'root:x:0:0:root:/root:/bin/bash\n');
    symlinkSync(path.join(dir, 'secret.txt'), path.join(dir, 'in', 'out.jsonl'));
    symlinkSync('a.jsonl', path.join(dir, 'in', 'same.jsonl'));
    const ctx = sourceContext({ checkpoints: new Map() });
    const units = await source.plan(ctx);
    expect(units.map((u) => [path.basename(u.id.split(':')[1]!), path.basename(u.params.path as string)])).toEqual([
      ['a.jsonl', 'a.jsonl'],
      ['same.jsonl', 'a.jsonl'],
    ]);
    expect((ctx.log as ReturnType<typeof recordingLogger>).lines).toEqual([
      `warn: skipped ${path.join(dir, 'in', 'out.jsonl')}: a symbolic link to ${path.join(dir, 'secret.txt')}, outside ${path.join(dir, 'in')} (set source.follow_symlinks: true to read such links)`,
    ]);

    const { source: following } = setupIn(dir, { follow_symlinks: true });
    const all = await following.plan(sourceContext({ checkpoints: new Map() }));
    expect(all.map((u) => path.basename(u.params.path as string))).toEqual(['a.jsonl', 'secret.txt', 'a.jsonl']);
  });

  it('the lines of a linked file outside the folder never reach the dead letters', async () => {
    const { dir } = setup();
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    writeFileSync(path.join(dir, 'shadow'), 'root:$6$canaryhash:19000:0:99999:7:::\n');
    symlinkSync(path.join(dir, 'shadow'), path.join(dir, 'in', 'z.jsonl'));
    writeFileSync(
      path.join(dir, 'p.yaml'),
      'version: 1\nname: links\nsource: { type: file, paths: [in], format: jsonl }\nsink: { type: jsonl, path: out }\n',
    );
    const io = memoryIo({});
    expect(await runCli(['run', path.join(dir, 'p.yaml'), '--no-progress'], io), io.stderr.join('\n')).toBe(0);
    expect(io.stderr.join('\n')).toMatch(/^warn: skipped .*z\.jsonl: a symbolic link/m);
    expect(io.stdout.join('\n')).toMatch(/^ {2}dead letters 0$/m);
    expect(readFileSync(path.join(dir, '.sluice', 'links', 'dead-letters.jsonl'), 'utf8')).toBe('');
  });

  it('a file replaced by a link after the plan is not read', async () => {
    const { dir, source } = setup({ incremental: false });
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    const [u] = await source.plan(sourceContext());
    writeFileSync(path.join(dir, 'secret.txt'), 'not for sluice\n');
    unlinkSync(path.join(dir, 'in', 'a.jsonl'));
    symlinkSync(path.join(dir, 'secret.txt'), path.join(dir, 'in', 'a.jsonl'));
    const read = async (): Promise<void> => {
      for await (const _ of source.read(u!, sourceContext())) void _;
    };
    await expect(read()).rejects.toThrow(SluiceError);
    await expect(source.rawFile!(u!, sourceContext(), dir)).rejects.toThrow(/replaced by a symbolic link/);
  });
});
