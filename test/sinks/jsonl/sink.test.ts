import { lstat, mkdir, readFile, readdir, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { NativeLoadRefused, SluiceError } from '../../../src/core/errors.js';
import type { Manifest } from '../../../sinks/output-files/manifest.js';
import { unitFileStem } from '../../../sinks/output-files/unit-file-name.js';
import { jsonlSinkSchema, type JsonlSinkConfig } from '../../../sinks/jsonl/config.js';
import { JsonlSink } from '../../../sinks/jsonl/sink.js';
import { batches, failingBatches, query, removeTempDirs, richRows, sinkContext, tempDir, unit } from '../helpers.js';
import type { FileSinkHooks } from '../../../sinks/output-files/output-dir.js';

afterAll(removeTempDirs);

let dir: string;

beforeEach(async () => {
  dir = await tempDir();
});

function config(over: Partial<JsonlSinkConfig> = {}): JsonlSinkConfig {
  return jsonlSinkSchema.parse({ type: 'jsonl', path: 'out', ...over });
}

async function openSink(
  over: Partial<JsonlSinkConfig> = {},
  fresh = true,
  hooks: FileSinkHooks = {},
): Promise<JsonlSink> {
  const sink = new JsonlSink(config(over), { hooks });
  await sink.open(sinkContext(dir, { fresh }));
  return sink;
}

async function manifest(sub = 'out'): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(dir, sub, '_sluice_manifest.json'), 'utf8')) as Manifest;
}

/** Data files a glob reader would see. */
async function visible(sub = 'out'): Promise<string[]> {
  return (await readdir(path.join(dir, sub))).filter((f) => /\.jsonl(\.gz)?$/.test(f)).sort();
}

describe('jsonl sink', () => {
  it('writes one file per unit with ISO timestamps and YYYY-MM-DD dates, listed in the manifest', async () => {
    const sink = await openSink();
    expect(await sink.writeUnit(unit('u1'), batches(richRows()))).toEqual({ committed: true, records: 2 });
    const name = `${unitFileStem('run1/u1')}.jsonl`;
    expect(await visible()).toEqual([name]);
    const lines = (await readFile(path.join(dir, 'out', name), 'utf8')).trimEnd().split('\n');
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first.at).toBe('2024-01-02T03:04:05.678Z');
    expect(first.day).toBe('2024-02-29');
    expect(first.funding).toEqual({ rounds: 2, last: '2020-05-06T07:08:09.000Z', kind: null });
    const m = await manifest();
    expect(m.units['run1/u1']).toMatchObject({ records: 2, files: [name] });
    const back = await query(
      `SELECT id, people, note FROM read_json('${path.join(dir, 'out', '*.jsonl')}') ORDER BY id`,
    );
    expect(back).toEqual([
      {
        id: 'a',
        people: [
          { name: 'p1', age: 30 },
          { name: 'p2', age: null },
        ],
        note: null,
      },
      { id: 'b', people: null, note: 'text "quoted" é' },
    ]);
    await sink.finish();
  });

  it('gzips when asked or when the path ends in .gz, and DuckDB reads the files back', async () => {
    const sink = new JsonlSink(config({ path: 'out.gz' }));
    await sink.open(sinkContext(dir));
    await sink.writeUnit(unit('u1'), batches(richRows()));
    const files = await visible('out.gz');
    expect(files).toEqual([`${unitFileStem('run1/u1')}.jsonl.gz`]);
    const text = gunzipSync(await readFile(path.join(dir, 'out.gz', files[0]!))).toString();
    expect(text.split('\n').filter(Boolean)).toHaveLength(2);
    expect(await query(`SELECT count(*) AS n FROM read_json('${path.join(dir, 'out.gz', '*.jsonl.gz')}')`)).toEqual([
      { n: 2 },
    ]);
    expect(config({ compress: false, path: 'x.gz' }).compress).toBe(false);
  });

  it('records a unit without records without writing a file, and commits a unit only once', async () => {
    const sink = await openSink();
    expect(await sink.writeUnit(unit('empty'), batches([]))).toEqual({ committed: true, records: 0 });
    expect(await sink.writeUnit(unit('u1'), batches(richRows()))).toEqual({ committed: true, records: 2 });
    expect(await sink.writeUnit(unit('u1'), batches(richRows()))).toEqual({ committed: false, records: 0 });
    expect(await visible()).toHaveLength(1);
    expect((await manifest()).units['run1/empty']).toMatchObject({ records: 0, files: [] });
    const again = await openSink({}, false);
    expect(await again.committedUnits()).toEqual(new Set(['run1/empty', 'run1/u1']));
  });

  it('commits nothing of a unit whose source fails half-way, and leaves no temp file', async () => {
    const sink = await openSink();
    await expect(sink.writeUnit(unit('u1'), failingBatches(richRows()))).rejects.toThrow(/source broke/);
    expect(await visible()).toEqual([]);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
    expect(await sink.committedUnits()).toEqual(new Set());
  });

  it('a failure before the manifest records a unit leaves no file in place and no temp file; the retry commits once', async () => {
    const crashing = await openSink({}, true, {
      beforeManifest: () => {
        throw new Error('crash before the manifest');
      },
    });
    await crashing.writeUnit(unit('ok'), batches([])); // no file: no marker, no hook
    await expect(crashing.writeUnit(unit('u1'), batches(richRows()))).rejects.toThrow(/crash before/);
    expect(await visible()).toEqual([]);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
    expect(Object.keys((await manifest()).units)).toEqual(['run1/ok']);
    // A temp file of another unit that was being written when the process died.
    await writeFile(path.join(dir, 'out', '.sluice-tmp', 'other.1234.tmp'), 'partial');

    const sink = await openSink({}, false);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/ok']));
    expect(await sink.writeUnit(unit('u1'), batches(richRows()))).toEqual({ committed: true, records: 2 });
    expect(await visible()).toHaveLength(1);
    expect((await manifest()).units['run1/u1']?.records).toBe(2);
  });

  it('a crash after the manifest records a unit and before its file is in place: the next open moves it in', async () => {
    const crashing = await openSink({}, true, {
      afterManifest: () => {
        throw new Error('crash after the manifest');
      },
    });
    await expect(crashing.writeUnit(unit('u1'), batches(richRows()))).rejects.toThrow(
      /recorded but its files are not all in place: crash after the manifest/,
    );
    // Committed, not yet visible: a reader listing the directory sees no file the manifest does not commit.
    expect(await visible()).toEqual([]);
    expect((await manifest()).units['run1/u1']?.records).toBe(2);
    const sink = new JsonlSink(config({}));
    const ctx = sinkContext(dir, { fresh: false });
    await sink.open(ctx);
    expect(await visible()).toEqual([`${unitFileStem('run1/u1')}.jsonl`]);
    expect(ctx.logs.join('\n')).toMatch(/warn: .*completed a commit a crash interrupted: moved 1 committed file/);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
    expect(await sink.writeUnit(unit('u1'), batches(richRows()))).toEqual({ committed: false, records: 0 });
    const text = await readFile(path.join(dir, 'out', `${unitFileStem('run1/u1')}.jsonl`), 'utf8');
    expect(text.trim().split('\n')).toHaveLength(2);
  });

  it('finish() moves in the files of a commit that could not be completed earlier in the run', async () => {
    let fail = true;
    const sink = await openSink({}, true, {
      afterManifest: () => {
        if (fail) throw new Error('disk full');
      },
    });
    await expect(sink.writeUnit(unit('u1'), batches(richRows()))).rejects.toThrow(/disk full/);
    fail = false;
    expect(await visible()).toEqual([]);
    await sink.finish();
    expect(await visible()).toEqual([`${unitFileStem('run1/u1')}.jsonl`]);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
  });

  it('copies a unit file natively: gzip bytes as they are, or converted, every line checked', async () => {
    const text = '{"id":1,"at":"2024-01-01T00:00:00Z"}\n{"id":2}\n';
    const gz = path.join(dir, 'in.bin');
    await writeFile(gz, gzipSync(text));
    const plain = path.join(dir, 'in.jsonl');
    await writeFile(plain, text);

    const zipped = new JsonlSink(config({ path: 'z', compress: true }));
    await zipped.open(sinkContext(dir));
    expect(await zipped.writeUnitFile(unit('g'), { path: gz, decode: { format: 'jsonl' }, temporary: false })).toEqual({
      committed: true,
      records: 2,
    });
    expect(await readFile(path.join(dir, 'z', `${unitFileStem('run1/g')}.jsonl.gz`))).toEqual(await readFile(gz));
    await zipped.writeUnitFile(unit('p'), { path: plain, decode: { format: 'jsonl' }, temporary: false });
    expect(gunzipSync(await readFile(path.join(dir, 'z', `${unitFileStem('run1/p')}.jsonl.gz`))).toString()).toBe(text);

    const sink = await openSink();
    await sink.writeUnitFile(unit('g'), { path: gz, decode: { format: 'jsonl' }, temporary: false });
    expect(await readFile(path.join(dir, 'out', `${unitFileStem('run1/g')}.jsonl`), 'utf8')).toBe(text);

    await writeFile(plain, '{"id":1}\nnot json\n');
    const bad = sink.writeUnitFile(unit('bad'), { path: plain, decode: { format: 'jsonl' }, temporary: false });
    await expect(bad).rejects.toThrow(NativeLoadRefused);
    await expect(bad).rejects.toThrow(/not JSON at byte 9/);
    const csv = sink.writeUnitFile(unit('csv'), { path: plain, decode: { format: 'csv' }, temporary: false });
    await expect(csv).rejects.toThrow(NativeLoadRefused);
    await expect(csv).rejects.toThrow(/JSONL natively, not csv/);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/g']));
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
  });

  it('replace swaps a whole new generation in at finish; a failed run leaves the old one; resume continues', async () => {
    const first = await openSink({ write: 'replace' });
    await first.writeUnit(unit('old'), batches([{ gen: 'old' }]));
    await first.finish();
    expect((await lstat(path.join(dir, 'out'))).isSymbolicLink()).toBe(true);
    const oldFiles = await visible();
    expect(oldFiles).toHaveLength(1);

    const failed = await openSink({ write: 'replace' }, true);
    await failed.writeUnit(unit('a'), batches([{ gen: 'new' }]));
    // During the run (and after it failed) readers see exactly the old generation.
    expect(await visible()).toEqual(oldFiles);

    const resumed = await openSink({ write: 'replace' }, false);
    expect(await resumed.committedUnits()).toEqual(new Set(['run1/a']));
    await resumed.writeUnit(unit('b'), batches([{ gen: 'new' }]));
    expect(await visible()).toEqual(oldFiles);
    await resumed.finish();
    expect(await visible()).toEqual([`${unitFileStem('run1/a')}.jsonl`, `${unitFileStem('run1/b')}.jsonl`].sort());
    expect(Object.keys((await manifest()).units).sort()).toEqual(['run1/a', 'run1/b']);
    // Only the live generation is kept.
    const gens = await readdir(path.join(dir, '.out.sluice-generations'));
    expect(gens).toEqual([path.basename(await readlink(path.join(dir, 'out')))]);

    const fresh = await openSink({ write: 'replace' }, true);
    expect(await fresh.committedUnits()).toEqual(new Set());
  });

  it('replace takes over a plain directory written by an earlier append run', async () => {
    const append = await openSink();
    await append.writeUnit(unit('old'), batches([{ x: 1 }]));
    const replace = await openSink({ write: 'replace' });
    await replace.writeUnit(unit('new'), batches([{ x: 2 }]));
    await replace.finish();
    expect(await visible()).toEqual([`${unitFileStem('run1/new')}.jsonl`]);
  });

  it('names the path and what to do when it cannot be written, and refuses a foreign manifest', async () => {
    await writeFile(path.join(dir, 'file'), 'x');
    const err = await new JsonlSink(config({ path: 'file' })).open(sinkContext(dir)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toContain(path.join(dir, 'file'));
    expect((err as SluiceError).hint).toMatch(/a file is in the way/);

    await mkdir(path.join(dir, 'bad'));
    await writeFile(path.join(dir, 'bad', '_sluice_manifest.json'), '{oops');
    await expect(new JsonlSink(config({ path: 'bad' })).open(sinkContext(dir))).rejects.toThrow(/not valid JSON/);
    await writeFile(
      path.join(dir, 'bad', '_sluice_manifest.json'),
      JSON.stringify({ version: 1, format: 'parquet', units: {} }),
    );
    await expect(new JsonlSink(config({ path: 'bad' })).open(sinkContext(dir))).rejects.toThrow(/holds parquet output/);
  });

  it('locks its output directory, or the directory of its generations for replace', () => {
    expect(new JsonlSink(config({ path: 'out/a' })).lockPath('/base')).toBe('/base/out/a/.sluice-lock');
    expect(new JsonlSink(config({ path: 'out/a', write: 'replace' })).lockPath('/base')).toBe(
      '/base/out/.a.sluice-generations/.sluice-lock',
    );
  });
});
