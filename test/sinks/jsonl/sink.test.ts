import { lstat, mkdir, readFile, readdir, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { NativeLoadRefused, SluiceError } from '../../../src/core/errors.js';
import type { Manifest } from '../../../src/sink-kit/output-files/manifest.js';
import { jsonlSinkSchema, type JsonlSinkConfig } from '../../../sinks/jsonl/config.js';
import { JsonlSink } from '../../../sinks/jsonl/sink.js';
import {
  batches,
  failingBatches,
  query,
  removeTempDirs,
  richRows,
  sinkContext,
  tempDir,
  unit,
  type TestContext,
} from '../helpers.js';
import { armed, failWith } from '../../support/failpoints.js';

afterAll(removeTempDirs);

let dir: string;
let ctx: TestContext;

beforeEach(async () => {
  dir = await tempDir();
});

function config(over: Partial<JsonlSinkConfig> = {}): JsonlSinkConfig {
  return jsonlSinkSchema.parse({ type: 'jsonl', path: 'out', ...over });
}

async function openSink(over: Partial<JsonlSinkConfig> = {}, fresh = true): Promise<JsonlSink> {
  const sink = new JsonlSink(config(over));
  ctx = sinkContext(dir, { fresh });
  await sink.open(ctx);
  return sink;
}

async function manifest(sub = 'out'): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(dir, sub, '_sluice_manifest.json'), 'utf8')) as Manifest;
}

/** A target of one byte: every unit is published as a file of its own as soon as it is staged. */
const EACH_UNIT: Partial<JsonlSinkConfig> = { target_file_mb: 1 / 2 ** 20 };

/** The files the manifest lists for a unit. */
async function unitFiles(id: string, sub = 'out'): Promise<string[]> {
  return (await manifest(sub)).units[`run1/${id}`]?.files ?? [];
}

/** Files left in a temp or staging directory of the output. */
async function left(name: '.sluice-tmp' | '.sluice-staged', sub = 'out'): Promise<string[]> {
  return readdir(path.join(dir, sub, name));
}

/** Data files a glob reader would see. */
async function visible(sub = 'out'): Promise<string[]> {
  return (await readdir(path.join(dir, sub))).filter((f) => /\.jsonl(\.gz)?$/.test(f)).sort();
}

describe('jsonl sink', () => {
  it('stages a unit until finish() publishes it: ISO timestamps and YYYY-MM-DD dates, listed in the manifest', async () => {
    const sink = await openSink();
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    // Committed (a rerun skips it), not visible: it waits for more units to fill a file of the target size.
    expect(await visible()).toEqual([]);
    expect((await manifest()).units['run1/u1']).toMatchObject({ records: 2, files: [], staged: {} });
    expect(await left('.sluice-staged')).toHaveLength(1);
    await sink.finish();
    const files = await visible();
    expect(files).toEqual([expect.stringMatching(/^part-\d+-[0-9a-f]{6}-0\.jsonl$/)]);
    const name = files[0]!;
    const lines = (await readFile(path.join(dir, 'out', name), 'utf8')).trimEnd().split('\n');
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first.at).toBe('2024-01-02T03:04:05.678Z');
    expect(first.day).toBe('2024-02-29');
    expect(first.funding).toEqual({ rounds: 2, last: '2020-05-06T07:08:09.000Z', kind: null });
    const m = await manifest();
    expect(m.units['run1/u1']).toMatchObject({ records: 2, files: [name] });
    expect(m.units['run1/u1']?.staged).toBeUndefined();
    expect(await left('.sluice-staged')).toEqual([]);
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
  });

  it('gzips when asked or when the path ends in .gz, and DuckDB reads the files back', async () => {
    const sink = new JsonlSink(config({ path: 'out.gz' }));
    await sink.open(sinkContext(dir));
    await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT);
    await sink.finish();
    const files = await visible('out.gz');
    expect(files).toEqual([expect.stringMatching(/^part-.*\.jsonl\.gz$/)]);
    const text = gunzipSync(await readFile(path.join(dir, 'out.gz', files[0]!))).toString();
    expect(text.split('\n').filter(Boolean)).toHaveLength(2);
    expect(await query(`SELECT count(*) AS n FROM read_json('${path.join(dir, 'out.gz', '*.jsonl.gz')}')`)).toEqual([
      { n: 2 },
    ]);
    expect(config({ compress: false, path: 'x.gz' }).compress).toBe(false);
  });

  it('records a unit without records without writing a file, and commits a unit only once', async () => {
    const sink = await openSink();
    expect(await sink.writeUnit(unit('empty'), batches([]), NO_CHECKPOINT)).toEqual({ committed: true, records: 0 });
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    expect(await left('.sluice-staged')).toHaveLength(1);
    await sink.finish();
    expect(await visible()).toHaveLength(1);
    expect((await manifest()).units['run1/empty']).toEqual({ records: 0, files: [], committed_at: expect.any(String) });
    const again = await openSink({}, false);
    expect(await again.committedUnits()).toEqual(new Set(['run1/empty', 'run1/u1']));
  });

  it('commits nothing of a unit whose source fails half-way, and leaves no temp or staged file', async () => {
    const sink = await openSink();
    await expect(sink.writeUnit(unit('u1'), failingBatches(richRows()), NO_CHECKPOINT)).rejects.toThrow(/source broke/);
    await sink.finish();
    expect(await visible()).toEqual([]);
    expect(await left('.sluice-tmp')).toEqual([]);
    expect(await left('.sluice-staged')).toEqual([]);
    expect(await sink.committedUnits()).toEqual(new Set());
  });

  it('a publish that fails before the manifest records it leaves no file in place; the staged unit is published once later', async () => {
    const disarm = armed('files:before-manifest', failWith('crash before the manifest'));
    const crashing = await openSink(EACH_UNIT, true);
    await crashing.writeUnit(unit('ok'), batches([]), NO_CHECKPOINT); // nothing staged: no publish, no hook
    // The unit is committed by staging; the publish it starts fails, and is left to the end of the run.
    expect(await crashing.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    expect(ctx.logs.join('\n')).toMatch(
      /warn: jsonl sink: publishing staged units failed, retried at the end: .*crash/,
    );
    await expect(crashing.finish()).rejects.toThrow(/crash before the manifest/);
    disarm();
    expect(await visible()).toEqual([]);
    expect(await left('.sluice-tmp')).toEqual([]);
    expect((await manifest()).units['run1/u1']).toMatchObject({ records: 2, files: [], staged: {} });
    // A temp file of a publish that was being written when the process died.
    await writeFile(path.join(dir, 'out', '.sluice-tmp', 'publish-x.1234.tmp'), 'partial');

    const sink = await openSink(EACH_UNIT, false);
    expect(await left('.sluice-tmp')).toEqual([]);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/ok', 'run1/u1']));
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    await sink.finish();
    expect(await visible()).toEqual(await unitFiles('u1'));
    expect((await readFile(path.join(dir, 'out', (await visible())[0]!), 'utf8')).trim().split('\n')).toHaveLength(2);
    expect(await left('.sluice-staged')).toEqual([]);
  });

  it('a crash after the manifest records a publish and before its file is in place: the next open moves it in', async () => {
    const disarm = armed('files:after-manifest', failWith('crash after the manifest'));
    const crashing = await openSink(EACH_UNIT, true);
    expect(await crashing.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    disarm();
    expect(ctx.logs.join('\n')).toMatch(/recorded but its files are not all in place: crash after the manifest/);
    // Committed, not yet visible: a reader listing the directory sees no file the manifest does not commit.
    expect(await visible()).toEqual([]);
    const [name] = await unitFiles('u1');
    expect(name).toMatch(/^part-.*\.jsonl$/);
    const sink = new JsonlSink(config(EACH_UNIT));
    const reopened = sinkContext(dir, { fresh: false });
    await sink.open(reopened);
    expect(await visible()).toEqual([name]);
    expect(reopened.logs.join('\n')).toMatch(/warn: .*completed a commit a crash interrupted: moved 1 committed file/);
    expect(await left('.sluice-tmp')).toEqual([]);
    // The published unit's staging file is no longer the manifest's: removed, not published again.
    expect(await left('.sluice-staged')).toEqual([]);
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    await sink.finish();
    expect(await visible()).toEqual([name]);
    expect((await readFile(path.join(dir, 'out', name!), 'utf8')).trim().split('\n')).toHaveLength(2);
  });

  it('finish() moves in the files of a publish that could not be completed earlier in the run', async () => {
    let fail = true;
    armed('files:after-manifest', () => {
      if (fail) throw new Error('disk full');
    });
    const sink = await openSink(EACH_UNIT, true);
    await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT);
    expect(ctx.logs.join('\n')).toMatch(/disk full/);
    fail = false;
    expect(await visible()).toEqual([]);
    await sink.finish();
    expect(await visible()).toEqual(await unitFiles('u1'));
    expect(await left('.sluice-tmp')).toEqual([]);
    expect(await left('.sluice-staged')).toEqual([]);
  });

  it('copies a unit file natively: gzip bytes as they are, or converted, every line checked', async () => {
    const text = '{"id":1,"at":"2024-01-01T00:00:00Z"}\n{"id":2}\n';
    const gz = path.join(dir, 'in.bin');
    await writeFile(gz, gzipSync(text));
    const plain = path.join(dir, 'in.jsonl');
    await writeFile(plain, text);
    const raw = (p: string, format: 'jsonl' | 'csv' = 'jsonl') => ({ path: p, decode: { format }, temporary: false });

    const zipped = new JsonlSink(config({ path: 'z', compress: true, ...EACH_UNIT }));
    await zipped.open(sinkContext(dir));
    expect(await zipped.capabilities.native!.load(unit('g'), raw(gz), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    expect(await readFile(path.join(dir, 'z', (await unitFiles('g', 'z'))[0]!))).toEqual(await readFile(gz));
    await zipped.capabilities.native!.load(unit('p'), raw(plain), NO_CHECKPOINT);
    expect(gunzipSync(await readFile(path.join(dir, 'z', (await unitFiles('p', 'z'))[0]!))).toString()).toBe(text);

    const sink = await openSink(EACH_UNIT);
    await sink.capabilities.native!.load(unit('g'), raw(gz), NO_CHECKPOINT);
    expect(await readFile(path.join(dir, 'out', (await unitFiles('g'))[0]!), 'utf8')).toBe(text);

    await writeFile(plain, '{"id":1}\nnot json\n');
    const bad = sink.capabilities.native!.load(unit('bad'), raw(plain), NO_CHECKPOINT);
    await expect(bad).rejects.toThrow(NativeLoadRefused);
    await expect(bad).rejects.toThrow(/not JSON at byte 9/);
    const csv = sink.capabilities.native!.load(unit('csv'), raw(plain, 'csv'), NO_CHECKPOINT);
    await expect(csv).rejects.toThrow(NativeLoadRefused);
    await expect(csv).rejects.toThrow(/JSONL natively, not csv/);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/g']));
    expect(await left('.sluice-tmp')).toEqual([]);
    expect(await left('.sluice-staged')).toEqual([]);
  });

  it('replace swaps a whole new generation in at finish; a failed run leaves the old one; resume continues', async () => {
    const first = await openSink({ write: 'replace' });
    await first.writeUnit(unit('old'), batches([{ gen: 'old' }]), NO_CHECKPOINT);
    await first.finish();
    expect((await lstat(path.join(dir, 'out'))).isSymbolicLink()).toBe(true);
    const oldFiles = await visible();
    expect(oldFiles).toHaveLength(1);

    const failed = await openSink({ write: 'replace' }, true);
    await failed.writeUnit(unit('a'), batches([{ gen: 'new' }]), NO_CHECKPOINT);
    // During the run (and after it failed) readers see exactly the old generation.
    expect(await visible()).toEqual(oldFiles);

    const resumed = await openSink({ write: 'replace' }, false);
    expect(await resumed.committedUnits()).toEqual(new Set(['run1/a']));
    await resumed.writeUnit(unit('b'), batches([{ gen: 'new' }]), NO_CHECKPOINT);
    expect(await visible()).toEqual(oldFiles);
    await resumed.finish();
    // Both units, the one the failed run staged among them, in one file.
    const files = await visible();
    expect(files).toHaveLength(1);
    expect(await unitFiles('a')).toEqual(files);
    expect(await unitFiles('b')).toEqual(files);
    expect(await readFile(path.join(dir, 'out', files[0]!), 'utf8')).toBe('{"gen":"new"}\n{"gen":"new"}\n');
    expect(Object.keys((await manifest()).units).sort()).toEqual(['run1/a', 'run1/b']);
    // Only the live generation is kept.
    const gens = await readdir(path.join(dir, '.out.sluice-generations'));
    expect(gens).toEqual([path.basename(await readlink(path.join(dir, 'out')))]);

    const fresh = await openSink({ write: 'replace' }, true);
    expect(await fresh.committedUnits()).toEqual(new Set());
  });

  it('replace takes over a plain directory written by an earlier append run', async () => {
    const append = await openSink();
    await append.writeUnit(unit('old'), batches([{ x: 1 }]), NO_CHECKPOINT);
    const replace = await openSink({ write: 'replace' });
    await replace.writeUnit(unit('new'), batches([{ x: 2 }]), NO_CHECKPOINT);
    await replace.finish();
    expect(await visible()).toEqual(await unitFiles('new'));
    expect(await readFile(path.join(dir, 'out', (await visible())[0]!), 'utf8')).toBe('{"x":2}\n');
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
    expect(new JsonlSink(config({ path: 'out/a' }), { baseDir: '/base' }).capabilities.files!.lockFile).toBe(
      '/base/out/a/.sluice-lock',
    );
    expect(
      new JsonlSink(config({ path: 'out/a', write: 'replace' }), { baseDir: '/base' }).capabilities.files!.lockFile,
    ).toBe('/base/out/.a.sluice-generations/.sluice-lock');
  });
});
