/**
 * A Parquet output an earlier sluice left stuck (issue 23): units staged without their records judged, one of which
 * no publish could write, so every later run failed. Opening it now judges those units: the records the output
 * cannot hold go to the dead letters, the rest of each unit publishes.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { DeadLetter } from '../../../src/core/types.js';
import { parquetSinkSchema } from '../../../sinks/parquet/config.js';
import { ParquetSink } from '../../../sinks/parquet/sink.js';
import type { Manifest } from '../../../src/sink-kit/output-files/manifest.js';
import { batches, removeTempDirs, sinkContext, tempDir, unit } from '../helpers.js';

afterAll(removeTempDirs);

const config = parquetSinkSchema.parse({ type: 'parquet', path: 'out', partition_by: ['cc'] });

async function readBack(dir: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    const glob = path.join(dir, 'out', '**', '*.parquet');
    const r = await conn.runAndReadAll(
      `SELECT id::INT AS id, cc FROM read_parquet('${glob}', hive_partitioning = true, union_by_name = true, hive_types_autocast = false) ORDER BY id`,
    );
    return r.getRowObjectsJS() as Record<string, unknown>[];
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

describe('parquet sink: units an earlier sluice staged without judging them', () => {
  it('are judged when the output opens: what cannot be published is dead-lettered, the rest publishes', async () => {
    const dir = await tempDir();
    // As an earlier sluice staged them: rows straight into the sink (no engine, no judge), nothing published.
    const before = new ParquetSink(config);
    await before.open(sinkContext(dir));
    await before.writeUnit(
      unit('u1'),
      batches([
        { id: 1, cc: 'US', Name: 'a' },
        { id: 2, cc: 'x'.repeat(300) },
        { id: 3, cc: 'DE' },
      ]),
      NO_CHECKPOINT,
    );
    await before.writeUnit(
      unit('u2'),
      batches([
        { id: 4, cc: 'FR', name: 'b' },
        { id: 5, cc: 'FR' },
      ]),
      NO_CHECKPOINT,
    );
    await before.close();
    const manifestFile = path.join(dir, 'out', '_sluice_manifest.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest;
    for (const u of Object.values(manifest.units)) delete u.staged!.longest;
    await writeFile(manifestFile, JSON.stringify(manifest));

    const letters: DeadLetter[] = [];
    const ctx = { ...sinkContext(dir, { fresh: false }), deadLetter: (d: DeadLetter) => void letters.push(d) };
    const after = new ParquetSink(config);
    await after.open(ctx);
    await after.finish();
    await after.close();

    expect(letters.map((l) => [l.unit, l.reason])).toEqual([
      [
        'run1/u1',
        expect.stringMatching(
          /^record 1 \(staged by an earlier sluice\): partition value "x+…" of "cc": its directory name would be 303 bytes, over the 255/,
        ),
      ],
      [
        'run1/u2',
        expect.stringMatching(/^record 0 \(staged by an earlier sluice\): key "name" differs only in case from "Name"/),
      ],
    ]);
    expect(JSON.parse(letters[0]!.raw!)).toEqual({ id: 2, cc: 'x'.repeat(300) });
    expect((await readBack(dir)).map((r) => r.id)).toEqual([1, 3, 5]);
    const published = JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest;
    expect(Object.values(published.units).map((u) => [u.records, u.staged])).toEqual([
      [2, undefined],
      [1, undefined],
    ]);
    expect(ctx.logs.join('\n')).toMatch(
      /judged 2 unit\(s\) an earlier sluice staged without judging their records: 2 record/,
    );
  });
});
