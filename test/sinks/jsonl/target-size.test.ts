/**
 * The JSONL sink's files of a target size: units staged, then published together as files of about the target
 * size (the last one of a run smaller), each row exactly once whatever interrupts a run between staging and publish.
 */
import { appendFile, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { Row } from '../../../src/core/types.js';
import { jsonlSinkSchema, type JsonlSinkConfig } from '../../../sinks/jsonl/config.js';
import { JsonlSink } from '../../../sinks/jsonl/sink.js';
import type { Manifest } from '../../../src/sink-kit/output-files/manifest.js';
import { batches, query, removeTempDirs, sinkContext, tempDir, unit } from '../helpers.js';
import { armed, failWith } from '../../support/failpoints.js';

afterAll(removeTempDirs);

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});

/** A 4 KiB target: five units of ~1 KiB (`rowsOf`) fill a file. */
const TARGET = 4096;

function config(over: Partial<JsonlSinkConfig> = {}): JsonlSinkConfig {
  return jsonlSinkSchema.parse({ type: 'jsonl', path: 'out', target_file_mb: TARGET / 2 ** 20, ...over });
}

async function openSink(over: Partial<JsonlSinkConfig> = {}, opts: { fresh?: boolean } = {}): Promise<JsonlSink> {
  const sink = new JsonlSink(config(over));
  await sink.open(sinkContext(dir, { fresh: opts.fresh ?? false }));
  return sink;
}

/** Ten rows of ~100 bytes each. */
function rowsOf(u: number): Row[] {
  return Array.from({ length: 10 }, (_, i) => ({ unit: u, i, pad: 'x'.repeat(70) }));
}

async function manifest(sub = 'out'): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(dir, sub, '_sluice_manifest.json'), 'utf8')) as Manifest;
}

/** Data files a glob reader sees, with their sizes. */
async function visible(sub = 'out'): Promise<{ name: string; bytes: number }[]> {
  const names = (await readdir(path.join(dir, sub))).filter((f) => /\.jsonl(\.gz)?$/.test(f)).sort();
  return Promise.all(names.map(async (name) => ({ name, bytes: (await stat(path.join(dir, sub, name))).size })));
}

/** Every row a reader of the directory sees, as `unit/i` keys. */
async function keysSeen(sub = 'out'): Promise<string[]> {
  const keys: string[] = [];
  for (const { name } of await visible(sub)) {
    const bytes = await readFile(path.join(dir, sub, name));
    const text = name.endsWith('.gz') ? gunzipSync(bytes).toString() : bytes.toString();
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.split('\n').filter(Boolean)) {
      const r = JSON.parse(line) as { unit: number; i: number };
      keys.push(`${r.unit}/${r.i}`);
    }
  }
  return keys.sort();
}

const allKeys = (units: number[]): string[] => units.flatMap((u) => rowsOf(u).map((r) => `${u}/${r.i}`)).sort();
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

async function leftIn(name: '.sluice-tmp' | '.sluice-staged', sub = 'out'): Promise<string[]> {
  return readdir(path.join(dir, sub, name));
}

describe('jsonl sink: files of about the target size', () => {
  it('20 small units make a few files of about the target size; only full files appear during the run', async () => {
    const sink = await openSink({}, { fresh: true });
    let unitBytes = 0;
    for (const u of range(0, 20)) {
      await sink.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
      unitBytes = Math.max(unitBytes, (await manifest()).units[`run1/u${u}`]?.staged?.bytes ?? 0);
      // Readers see full files only: every unit not in one waits, staged.
      for (const f of await visible()) expect(f.bytes).toBeGreaterThanOrEqual(TARGET);
    }
    expect(unitBytes).toBeGreaterThan(TARGET / 6);
    await sink.finish();
    const files = await visible();
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect(files.length).toBeLessThanOrEqual(6);
    // At least the target, by less than one unit more; one file (the run's last) may be smaller.
    expect(files.filter((f) => f.bytes < TARGET).length).toBeLessThanOrEqual(1);
    for (const f of files) expect(f.bytes).toBeLessThan(TARGET + unitBytes);
    expect(await keysSeen()).toEqual(allKeys(range(0, 20)));
    // The manifest says which file holds a unit; the file holds its rows, in commit order.
    const m = await manifest();
    const names = new Set(files.map((f) => f.name));
    for (const u of range(0, 20)) {
      const entry = m.units[`run1/u${u}`]!;
      expect(entry.staged).toBeUndefined();
      expect(entry.files).toHaveLength(1);
      expect(names.has(entry.files[0]!)).toBe(true);
      expect(await readFile(path.join(dir, 'out', entry.files[0]!), 'utf8')).toContain(`{"unit":${u},"i":9,`);
    }
    expect(await leftIn('.sluice-staged')).toEqual([]);
    expect(await leftIn('.sluice-tmp')).toEqual([]);
  });

  it('native path: raw gzip files are joined as they are, as gzip members, a missing last newline added', async () => {
    const raws: Buffer[] = [];
    for (const u of range(0, 6)) {
      const text = rowsOf(u)
        .map((r) => JSON.stringify(r))
        .join('\n');
      // Every other file lacks its last newline: joined as it is, its last line would run into the next file's.
      raws.push(gzipSync(u % 2 === 0 ? `${text}\n` : text));
      await writeFile(path.join(dir, `raw${u}.gz`), raws[u]!);
    }
    const zipped = await openSink({ path: 'out.gz', target_file_mb: 1 }, { fresh: true });
    const plain = await openSink({ path: 'plain' }, { fresh: true });
    for (const u of range(0, 6)) {
      const file = { path: path.join(dir, `raw${u}.gz`), decode: { format: 'jsonl' as const }, temporary: false };
      expect(await zipped.capabilities.native!.load(unit(`u${u}`), file, NO_CHECKPOINT)).toEqual({
        committed: true,
        records: 10,
      });
      expect(await plain.capabilities.native!.load(unit(`u${u}`), file, NO_CHECKPOINT)).toEqual({
        committed: true,
        records: 10,
      });
    }
    await zipped.finish();
    await plain.finish();
    const [one, ...none] = await visible('out.gz');
    expect(none).toEqual([]);
    const bytes = await readFile(path.join(dir, 'out.gz', one!.name));
    // No second encode: the first raw file's bytes open the published file unchanged.
    expect(bytes.subarray(0, raws[0]!.length)).toEqual(raws[0]);
    expect(await keysSeen('out.gz')).toEqual(allKeys(range(0, 6)));
    expect(await keysSeen('plain')).toEqual(allKeys(range(0, 6)));
    expect(await query(`SELECT count(*)::INTEGER AS n FROM read_json('${dir}/out.gz/*.jsonl.gz')`)).toEqual([
      { n: 60 },
    ]);
  });

  it('interrupted between staging and publish: the next run skips the staged units and publishes each row once', async () => {
    // The target is never reached: every unit stays staged, and the run dies before finish() (kill -9: no close).
    const first = await openSink({ target_file_mb: 1 }, { fresh: true });
    for (const u of range(0, 7)) await first.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
    expect(await visible()).toEqual([]);
    // One unit at a time: all seven in one spool.
    const [spool, ...more] = await leftIn('.sluice-staged');
    expect(more).toEqual([]);
    // The lines of a unit the kill cut before the manifest recorded it: in the spool after the committed units'
    // bytes, and in a staging file of their own (an earlier sluice's).
    await appendFile(path.join(dir, 'out', '.sluice-staged', spool!), '{"unit":7,"i":0}\n{"uni');
    await writeFile(path.join(dir, 'out', '.sluice-staged', 'run1_u7-0000.1234.staged'), '{"unit":7,"i":0}\n{"uni');

    const rerun = await openSink({ target_file_mb: 1 });
    expect(await leftIn('.sluice-staged')).toEqual([spool]);
    expect(await rerun.committedUnits()).toEqual(new Set(range(0, 7).map((u) => `run1/u${u}`)));
    for (const u of range(0, 10)) {
      const r = await rerun.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
      expect(r.committed).toBe(u >= 7);
    }
    await rerun.finish();
    expect(await visible()).toHaveLength(1);
    expect(await keysSeen()).toEqual(allKeys(range(0, 10)));
    expect(await leftIn('.sluice-staged')).toEqual([]);
  });

  it('a publish of several files killed after the manifest records it: rolled forward on open, never redone', async () => {
    // A run with a larger target staged twelve units and died; the next one publishes them as several files at once.
    const first = await openSink({ target_file_mb: 1 }, { fresh: true });
    for (const u of range(0, 12)) await first.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
    const disarm = armed('files:after-manifest', failWith('killed after the manifest'));
    const dying = await openSink();
    await expect(dying.finish()).rejects.toThrow(/killed after the manifest/);
    disarm();
    const recorded = new Set(Object.values((await manifest()).units).flatMap((u) => u.files));
    expect(recorded.size).toBeGreaterThanOrEqual(2);
    expect(await visible()).toEqual([]);

    const reopened = await openSink();
    expect((await visible()).map((f) => f.name)).toEqual([...recorded].sort());
    expect(await leftIn('.sluice-staged')).toEqual([]);
    expect(await leftIn('.sluice-tmp')).toEqual([]);
    for (const u of range(0, 13)) await reopened.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
    await reopened.finish();
    expect(await keysSeen()).toEqual(allKeys(range(0, 13)));
    expect((await visible()).length).toBe(recorded.size + 1);
  });
  it('a full spool is published as it is: the file readers see is the staging file, not a copy of it', async () => {
    const sink = await openSink({}, { fresh: true });
    let staged: { name: string; ino: number } | undefined;
    for (const u of range(0, 20)) {
      const names = await leftIn('.sluice-staged');
      if (names.length === 1) {
        const ino = (await stat(path.join(dir, 'out', '.sluice-staged', names[0]!))).ino;
        staged = { name: names[0]!, ino };
      }
      await sink.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
      if ((await visible()).length > 0) break;
    }
    const [file, ...more] = await visible();
    expect(more).toEqual([]);
    expect(file!.bytes).toBeGreaterThanOrEqual(TARGET);
    expect((await stat(path.join(dir, 'out', file!.name))).ino).toBe(staged!.ino);
    expect(await leftIn('.sluice-staged')).not.toContain(staged!.name);
    await sink.finish();
  });

  it('units staged at once take spools of their own; the run still ends with one smaller file', async () => {
    const sink = await openSink({ target_file_mb: 1 }, { fresh: true });
    for (const u of range(0, 4)) {
      await Promise.all(
        [0, 1, 2].map((k) => sink.writeUnit(unit(`u${u * 3 + k}`), batches(rowsOf(u * 3 + k)), NO_CHECKPOINT)),
      );
    }
    expect((await leftIn('.sluice-staged')).length).toBeGreaterThan(1);
    await sink.finish();
    expect(await visible()).toHaveLength(1);
    expect(await keysSeen()).toEqual(allKeys(range(0, 12)));
    expect(await leftIn('.sluice-staged')).toEqual([]);
  });

  it('a unit refused while it is appended leaves none of its lines in the spool', async () => {
    // Two megabytes of good lines, then one that is not JSON: the checked copy has written the good ones by then.
    const good = `${JSON.stringify({ unit: 999, i: 0, pad: 'y'.repeat(1000) })}\n`.repeat(2048);
    await writeFile(path.join(dir, 'broken.jsonl.gz'), gzipSync(`${good}not json\n`));
    const broken = { path: path.join(dir, 'broken.jsonl.gz'), decode: { format: 'jsonl' as const }, temporary: false };
    const sink = await openSink({ target_file_mb: 1 }, { fresh: true });
    for (const u of range(0, 6)) {
      if (u % 2 === 1) {
        const load = sink.capabilities.native!.load(unit(`u${u}`), broken, NO_CHECKPOINT);
        await expect(load).rejects.toThrow(/not JSON at byte/);
      } else await sink.writeUnit(unit(`u${u}`), batches(rowsOf(u)), NO_CHECKPOINT);
    }
    await sink.finish();
    expect(await keysSeen()).toEqual(allKeys([0, 2, 4]));
  });
});
