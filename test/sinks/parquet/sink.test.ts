import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { Row } from '../../../src/core/types.js';
import type { Manifest } from '../../../src/sink-kit/output-files/manifest.js';
import { parquetSinkSchema, type ParquetSinkConfig } from '../../../sinks/parquet/config.js';
import { ParquetSink } from '../../../sinks/parquet/sink.js';
import {
  batches,
  columnTypes,
  query,
  removeTempDirs,
  RICH_BACK,
  richRows,
  sinkContext,
  tempDir,
  unit,
} from '../helpers.js';
import { armed, failWith } from '../../support/failpoints.js';
import { settled } from '../../support/settled.js';

afterAll(removeTempDirs);

let dir: string;

beforeEach(async () => {
  dir = await tempDir();
});

function config(over: Partial<ParquetSinkConfig> = {}): ParquetSinkConfig {
  return parquetSinkSchema.parse({ type: 'parquet', path: 'out', ...over });
}

async function openSink(over: Partial<ParquetSinkConfig> = {}, fresh = true): Promise<ParquetSink> {
  const sink = new ParquetSink(config(over));
  await sink.open(sinkContext(dir, { fresh }));
  return sink;
}

async function manifest(): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(dir, 'out', '_sluice_manifest.json'), 'utf8')) as Manifest;
}

/** Every file under `out/` a recursive glob would see, relative. */
async function allFiles(sub = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(dir, 'out', sub), { withFileTypes: true })) {
    const rel = sub ? `${sub}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await allFiles(rel)));
    else out.push(rel);
  }
  return out.sort();
}

const parquetFiles = async (): Promise<string[]> => (await allFiles()).filter((f) => f.endsWith('.parquet'));
const glob = (): string => path.join(dir, 'out', '**', '*.parquet');

function rows(from: number, n: number, pad = 0): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: from + i,
    cc: ['US', 'DE', 'FR'][(from + i) % 3],
    text: 'x'.repeat(pad),
    at: new Date(Date.UTC(2024, 0, 1) + (from + i) * 1000),
  }));
}

/**
 * Holds a publish where it is about to record its files (a unit's own commit stages, moves no file, and is not held):
 * `reached` once a publish is there, `release` lets it go on.
 */
function holdPublish(): { reached: Promise<void>; release: () => void; disarm: () => void } {
  let arrived!: () => void;
  const reached = new Promise<void>((r) => (arrived = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const disarm = armed('files:before-manifest', async () => {
    arrived();
    await released;
  });
  return { reached, release, disarm };
}

/** Units `u<from>` … `u<to - 1>` of 10 rows each, ~21 KB of JSON, written one after another. */
async function writeUnits(sink: ParquetSink, from: number, to: number): Promise<void> {
  for (let u = from; u < to; u++) await sink.writeUnit(unit(`u${u}`), batches(rows(u * 10, 10, 2_000)), NO_CHECKPOINT);
}

describe('parquet sink', () => {
  it('writes native STRUCT/LIST/TIMESTAMP/DATE columns that read_parquet reads back exactly', async () => {
    const sink = await openSink();
    expect(await sink.writeUnit(unit('u1'), batches(richRows()), NO_CHECKPOINT)).toEqual({
      committed: true,
      records: 2,
    });
    await sink.finish();
    await sink.close();
    const files = await parquetFiles();
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^part-.*-0\.parquet$/);
    expect(await columnTypes(`SELECT * FROM read_parquet('${glob()}')`)).toMatchObject({
      at: 'TIMESTAMP',
      day: 'DATE',
      // A field null in every row has no column, as in the DuckDB sink (test/sinks/parquet/dataset.test.ts).
      funding: 'STRUCT(rounds BIGINT, "last" TIMESTAMP)',
      tags: 'VARCHAR[]',
      people: 'STRUCT("name" VARCHAR, age BIGINT)[]',
    });
    const back = await query(`SELECT * FROM read_parquet('${glob()}') ORDER BY id`);
    expect(back).toEqual(RICH_BACK);
    const m = await manifest();
    expect(m.units['run1/u1']).toMatchObject({ records: 2, files });
    expect(m.units['run1/u1']?.staged).toBeUndefined();
  });

  it('keeps committed units staged and invisible until finish publishes them together', async () => {
    const sink = await openSink();
    await sink.writeUnit(unit('u1'), batches(rows(0, 10)), NO_CHECKPOINT);
    await sink.writeUnit(unit('u2'), batches(rows(10, 10)), NO_CHECKPOINT);
    expect(await sink.writeUnit(unit('u2'), batches(rows(10, 10)), NO_CHECKPOINT)).toEqual({
      committed: false,
      records: 0,
    });
    expect(await parquetFiles()).toEqual([]);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/u1', 'run1/u2']));
    expect((await manifest()).units['run1/u1']?.staged?.file).toMatch(/^\.sluice-staged\//);
    await sink.finish();
    const files = await parquetFiles();
    expect(files).toHaveLength(1);
    expect(await query(`SELECT count(*) AS n, count(DISTINCT id) AS d FROM read_parquet('${glob()}')`)).toEqual([
      { n: 20, d: 20 },
    ]);
    expect(await readdir(path.join(dir, 'out', '.sluice-staged'))).toEqual([]);
    const m = await manifest();
    expect(m.units['run1/u2']).toMatchObject({ records: 20 / 2, files });
  });

  it('publishes during the run once staged rows make a file of the target size, beside the next units', async () => {
    // The first publish waits for ~6 × 10 KB: the third unit makes it due, and its commit returns while it is held.
    const sink = await openSink({ file_size_bytes: 10_000 });
    const held = holdPublish();
    await writeUnits(sink, 0, 3);
    await held.reached;
    expect(await parquetFiles()).toEqual([]);
    held.disarm();
    held.release();
    await writeUnits(sink, 3, 5);
    expect((await parquetFiles()).length).toBeGreaterThan(0);
    await sink.finish();
    expect(await query(`SELECT count(*) AS n, count(DISTINCT id) AS d FROM read_parquet('${glob()}')`)).toEqual([
      { n: 50, d: 50 },
    ]);
    expect(Object.values((await manifest()).units).every((u) => u.files.length > 0 && !u.staged)).toBe(true);
  });

  it('closes only once the publish a commit started has ended', async () => {
    const sink = await openSink({ file_size_bytes: 10_000 });
    const held = holdPublish();
    await writeUnits(sink, 0, 3);
    await held.reached;
    const closing = sink.close();
    expect(await settled(closing)).toBe(false);
    held.release();
    await closing;
    const m = await manifest();
    expect(Object.values(m.units).every((u) => u.files.length > 0 && !u.staged)).toBe(true);
    expect(await query(`SELECT count(*) AS n FROM read_parquet('${glob()}')`)).toEqual([{ n: 30 }]);
  });

  it('says a publish a commit started failed, and publishes those units at finish', async () => {
    const ctx = sinkContext(dir);
    const sink = new ParquetSink(config({ file_size_bytes: 10_000 }));
    await sink.open(ctx);
    let reached!: () => void;
    const publishing = new Promise<void>((r) => (reached = r));
    const disarm = armed('files:before-manifest', () => {
      reached();
      throw new Error('disk full');
    });
    await writeUnits(sink, 0, 3);
    await publishing;
    disarm();
    await sink.finish();
    await sink.close();
    expect(
      ctx.logs.filter((l) => /publishing staged units failed, retried at the end: .*disk full/.test(l)),
    ).toHaveLength(1);
    expect(await query(`SELECT count(*) AS n, count(DISTINCT id) AS d FROM read_parquet('${glob()}')`)).toEqual([
      { n: 30, d: 30 },
    ]);
  });

  it('leaves out the empty file DuckDB opens when the last row group takes a file past the size limit', async () => {
    // 2,000 rows make one full row group (DuckDB groups rows 2,048 at a time) that takes the file past 1 KB: DuckDB
    // then opens a next file for rows that never come.
    const sink = await openSink({ file_size_bytes: 1_000, row_group_size: 1_000 });
    await sink.writeUnit(unit('u1'), batches(rows(0, 2_000)), NO_CHECKPOINT);
    await sink.finish();
    const files = await parquetFiles();
    expect(files).toHaveLength(1);
    expect((await manifest()).units['run1/u1']?.files).toEqual(files);
    expect(await query(`SELECT count(*) AS n FROM read_parquet('${glob()}')`)).toEqual([{ n: 2_000 }]);
  });

  it('partitions hive style, with the values in the directory names', async () => {
    const sink = await openSink({ partition_by: ['cc'] });
    await sink.writeUnit(unit('u1'), batches(rows(0, 9)), NO_CHECKPOINT);
    await sink.finish();
    const files = await parquetFiles();
    expect(files.map((f) => f.split('/')[0])).toEqual(['cc=DE', 'cc=FR', 'cc=US']);
    expect(
      await query(
        `SELECT cc, count(*) AS n FROM read_parquet('${glob()}', hive_partitioning = true) GROUP BY cc ORDER BY cc`,
      ),
    ).toEqual([
      { cc: 'DE', n: 3 },
      { cc: 'FR', n: 3 },
      { cc: 'US', n: 3 },
    ]);

    const nested = await openSink({ partition_by: ['o'], path: 'nested' });
    await nested.writeUnit(unit('u1'), batches([{ o: { a: 1 } }]), NO_CHECKPOINT);
    await expect(nested.finish()).rejects.toThrow(/partition column "o" is a STRUCT/);
  });

  it('cleans crash leftovers: unreferenced staged files, temp files, and a publish cut off before its manifest', async () => {
    const disarm = armed('files:before-manifest', failWith('crash while publishing'));
    const crashing = await openSink({}, true);
    await crashing.writeUnit(unit('u1'), batches(rows(0, 5)), NO_CHECKPOINT);
    await expect(crashing.finish()).rejects.toThrow(/crash while publishing/);
    disarm();
    expect(await parquetFiles()).toEqual([]); // nothing is in place before the manifest records it
    await writeFile(path.join(dir, 'out', '.sluice-staged', 'orphan.1234.staged'), '{"id":1}\n');
    await writeFile(path.join(dir, 'out', '.sluice-tmp', 'x.tmp'), 'partial');

    const sink = await openSink({}, false);
    expect(await parquetFiles()).toEqual([]);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
    expect((await readdir(path.join(dir, 'out', '.sluice-staged'))).some((f) => f.startsWith('orphan'))).toBe(false);
    // The unit stayed committed (staged) and is published exactly once.
    expect(await sink.committedUnits()).toEqual(new Set(['run1/u1']));
    await sink.finish();
    expect(await query(`SELECT count(*) AS n FROM read_parquet('${glob()}')`)).toEqual([{ n: 5 }]);
  });

  it('a crash after the manifest records a publish and before its files are in place: the next open moves them in', async () => {
    const disarm = armed('files:after-manifest', failWith('crash after the manifest'));
    const crashing = await openSink({}, true);
    await crashing.writeUnit(unit('u1'), batches(rows(0, 5)), NO_CHECKPOINT);
    await crashing.writeUnit(unit('u2'), batches(rows(5, 3)), NO_CHECKPOINT);
    await expect(crashing.finish()).rejects.toThrow(/not all in place: crash after the manifest/);
    disarm();
    expect(await parquetFiles()).toEqual([]);

    const sink = await openSink({}, false);
    expect(await parquetFiles()).toHaveLength(1);
    expect(await readdir(path.join(dir, 'out', '.sluice-tmp'))).toEqual([]);
    expect(await readdir(path.join(dir, 'out', '.sluice-staged'))).toEqual([]);
    expect(await sink.committedUnits()).toEqual(new Set(['run1/u1', 'run1/u2']));
    await sink.finish(); // nothing left to publish
    expect(await query(`SELECT count(*) AS n, count(DISTINCT id) AS k FROM read_parquet('${glob()}')`)).toEqual([
      { n: 8, k: 8 },
    ]);
  });

  it('keeps one column and struct-field order across publishes, whichever unit a field first appeared in', async () => {
    const first = await openSink();
    await first.writeUnit(unit('u1'), batches([{ id: 1, s: { a: 1, b: 'x' } }]), NO_CHECKPOINT);
    await first.finish();
    await first.close();
    const second = await openSink({}, false);
    await second.writeUnit(unit('u2'), batches([{ extra: true, s: { c: 2.5, b: 'y', a: 2 }, id: 2 }]), NO_CHECKPOINT);
    await second.finish();
    await second.close();
    const files = await parquetFiles();
    expect(files).toHaveLength(2);
    const layout = async (f: string) =>
      (
        await query(
          `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('${path.join(dir, 'out', f)}'))`,
        )
      ).map((r) => `${String(r.column_name)} ${String(r.column_type)}`);
    const [a, b] = await Promise.all(files.map(layout));
    expect(a).toEqual(['id BIGINT', 's STRUCT(a BIGINT, b VARCHAR)']);
    // The second file starts with the first one's columns and fields, in their order; new ones follow.
    expect(b).toEqual(['id BIGINT', 's STRUCT(a BIGINT, b VARCHAR, c DOUBLE)', 'extra BOOLEAN']);
    expect(
      await query(`SELECT id, s.a AS a, s.b AS b FROM read_parquet('${glob()}', union_by_name = true) ORDER BY id`),
    ).toEqual([
      { id: 1, a: 1, b: 'x' },
      { id: 2, a: 2, b: 'y' },
    ]);
  });

  it('replace publishes into a new generation that finish swaps in', async () => {
    const first = await openSink({ write: 'replace' });
    await first.writeUnit(unit('old'), batches(rows(0, 3)), NO_CHECKPOINT);
    await first.finish();
    const second = await openSink({ write: 'replace' });
    await second.writeUnit(unit('new'), batches(rows(100, 2)), NO_CHECKPOINT);
    expect(await query(`SELECT min(id) AS m FROM read_parquet('${glob()}')`)).toEqual([{ m: 0 }]);
    await second.finish();
    expect(await query(`SELECT min(id) AS m, count(*) AS n FROM read_parquet('${glob()}')`)).toEqual([
      { m: 100, n: 2 },
    ]);
  });

  it('refuses field names that differ only in case, and both size options at once', async () => {
    const sink = await openSink();
    await expect(sink.writeUnit(unit('u1'), batches([{ Name: 'a' }, { name: 'b' }]), NO_CHECKPOINT)).rejects.toThrow(
      /differ only in case/,
    );
    expect(await sink.committedUnits()).toEqual(new Set());
    expect(
      parquetSinkSchema.safeParse({ type: 'parquet', path: 'x', target_file_mb: 1, file_size_bytes: 5 }).success,
    ).toBe(false);
    expect(config().compression).toBe('zstd');
  });

  it('locks its output directory, or the directory of its generations for replace', () => {
    expect(new ParquetSink(config({ path: 'out/a' }), { baseDir: '/base' }).capabilities.files!.lockFile).toBe(
      '/base/out/a/.sluice-lock',
    );
    expect(
      new ParquetSink(config({ path: 'out/a', write: 'replace' }), { baseDir: '/base' }).capabilities.files!.lockFile,
    ).toBe('/base/out/.a.sluice-generations/.sluice-lock');
  });
});

describe('parquet sink: shards', () => {
  it('two shards at once into one partitioned directory: the single run’s layout and rows, a manifest each', async () => {
    const shard = async (index: number): Promise<ParquetSink> => {
      const sink = new ParquetSink(config({ partition_by: ['cc'] }), { baseDir: dir, shard: { index, count: 2 } });
      await sink.open(sinkContext(dir, { fresh: false }));
      return sink;
    };
    const [a, b] = await Promise.all([shard(0), shard(1)]);
    await Promise.all([
      a.writeUnit(unit('u0'), batches(rows(0, 9)), NO_CHECKPOINT),
      b.writeUnit(unit('u1'), batches(rows(9, 9)), NO_CHECKPOINT),
    ]);
    await Promise.all([a.finish(), b.finish()]);
    const files = await parquetFiles();
    expect(new Set(files.map((f) => path.dirname(f)))).toEqual(new Set(['cc=DE', 'cc=FR', 'cc=US']));
    expect(
      files.every((f) => /^cc=\w+\/part-shard-[01]-of-2-/.test(f)),
      files.join(' '),
    ).toBe(true);
    expect((await allFiles()).filter((f) => f.startsWith('_sluice_'))).toEqual([
      '_sluice_manifest.shard-0-of-2.json',
      '_sluice_manifest.shard-1-of-2.json',
    ]);
    expect(
      await query(
        `SELECT count(DISTINCT id) AS ids, count(*) AS n FROM read_parquet('${glob()}', hive_partitioning = true)`,
      ),
    ).toEqual([{ ids: 18, n: 18 }]);
    expect(await a.committedUnits()).toEqual(new Set(['run1/u0']));
    // A shard's lock is its own, beside the others' in the directory.
    expect(a.capabilities.files!.lockFile).toBe(path.join(dir, 'out', '.sluice-lock.shard-0-of-2'));
    await Promise.all([a.close(), b.close()]);
  });
});
