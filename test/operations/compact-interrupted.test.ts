/**
 * A `sluice compact` killed with -9 at each compaction failpoint, and then a command other than `compact` or `run`:
 * `sluice state` of the pipeline opens the output, which completes the interrupted commit (after the manifest swap)
 * or rolls it back (before it). A reader that globs `**\/*.parquet` without the manifest then sees each row once, and
 * a reader that follows the manifest finds every file it names (docs/guides/compaction.md says what each sees
 * before). The source keeps no cursor: `sluice state` opens the outputs for such a pipeline too.
 *
 * `npm test`: every failpoint on local disk. `SLUICE_COMPACT=full` (CI): on S3 as well.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from '../cli/memory-io.js';
import { startS3Server, type S3TestServer } from '../support/s3-server.js';
import { COMPACT_FAILPOINTS, compactKilled } from './compact-failpoints.js';

const FULL = process.env.SLUICE_COMPACT === 'full';
const BUCKET = 'interrupted';
const NIGHTS = 3;
const ROWS = 20;

let conn: DuckDBConnection;
let s3: S3TestServer | undefined;
const dirs: string[] = [];
beforeAll(async () => {
  conn = await (await DuckDBInstance.create(':memory:')).connect();
  if (FULL) {
    s3 = await startS3Server();
    await s3.createBucket(BUCKET);
  }
});
afterAll(async () => {
  conn?.closeSync();
  await s3?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; err: string }> {
  const io = memoryIo({});
  const code = await runCli(args, io);
  return { code, err: io.stderr.join('\n') };
}

interface Output {
  dir: string;
  file: string;
  /** Where a reader finds the output: the directory, or a local copy of the prefix made by `readable`. */
  readable(): Promise<string>;
}

let outputs = 0;

/** Small Parquet files of `NIGHTS` input files in two partitions (a tiny target, then the default again). */
async function smallFiles(storage: 'local' | 's3'): Promise<Output> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-compact-killed-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'in'));
  for (let night = 1; night <= NIGHTS; night++)
    writeFileSync(
      path.join(dir, 'in', `night-${night}.jsonl`),
      Array.from({ length: ROWS }, (_, i) => `{"id":"n${night}-${i}","country":"${i % 2 ? 'DE' : 'US'}"}\n`).join(''),
    );
  const prefix = `o${++outputs}/`;
  const where = storage === 'local' ? 'out' : `s3://${BUCKET}/${prefix}`;
  const file = path.join(dir, 'p.yaml');
  const write = (tiny: boolean): void =>
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        name: 'killed',
        source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1, incremental: false },
        sinks: [
          {
            type: 'parquet',
            path: where,
            partition_by: ['country'],
            ...(storage === 's3' && { s3: { endpoint: s3!.endpoint, force_path_style: true } }),
            ...(tiny && { file_size_bytes: 100 }),
          },
        ],
      }),
    );
  write(true);
  const r = await cli('run', file, '--no-progress', '--quiet');
  expect(r.code, r.err).toBe(0);
  write(false);
  return {
    dir,
    file,
    async readable() {
      if (storage === 'local') return path.join(dir, 'out');
      const local = path.join(dir, `.read-${Date.now()}`);
      for (const key of await s3!.keys(BUCKET, prefix)) {
        const to = path.join(local, key.slice(prefix.length));
        mkdirSync(path.dirname(to), { recursive: true });
        writeFileSync(to, await s3!.get(BUCKET, key));
      }
      return local;
    },
  };
}

/** The ids a reader gets from `files` (relative to `root`), sorted. */
async function ids(root: string, files: string[]): Promise<string[]> {
  if (files.length === 0) return [];
  const list = files.map((f) => `'${path.join(root, f).replace(/'/g, "''")}'`).join(', ');
  const r = await conn.runAndReadAll(`SELECT id FROM read_parquet([${list}]) ORDER BY id`);
  return r.getRowObjectsJS().map((row) => String(row.id));
}

/** What a glob reader (every `*.parquet` below the root) and a manifest-following reader find. */
async function readers(o: Output): Promise<{ glob: string[]; manifest: string[]; files: number; temp: string[] }> {
  const root = await o.readable();
  const all = readdirSync(root, { recursive: true }) as string[];
  const data = all.filter((f) => f.endsWith('.parquet'));
  const m = JSON.parse(readFileSync(path.join(root, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { files: string[] }>;
  };
  const named = [...new Set(Object.values(m.units).flatMap((u) => u.files))];
  return {
    glob: await ids(root, data),
    manifest: await ids(root, named),
    files: data.length,
    temp: all.filter((f) => f.startsWith(`.sluice-tmp${path.sep}`)),
  };
}

const expected = Array.from({ length: NIGHTS }, (_, n) => Array.from({ length: ROWS }, (_, i) => `n${n + 1}-${i}`))
  .flat()
  .sort();

describe('a kill -9 of sluice compact, then sluice state: every reader sees each row once', () => {
  for (const storage of FULL ? (['local', 's3'] as const) : (['local'] as const))
    for (const failpoint of COMPACT_FAILPOINTS)
      it(`${storage}, killed at ${failpoint}`, { timeout: 120_000 }, async () => {
        const o = await smallFiles(storage);
        const before = await readers(o);
        expect(before.glob).toEqual(expected);
        // At least two small files per partition: compaction has work in each.
        expect(before.files).toBeGreaterThanOrEqual(4);

        const killed = await compactKilled(o.file, o.dir, failpoint);
        expect(killed.died, killed.stderr).toBe(true);

        const state = await cli('state', o.file);
        expect(state.code, state.err).toBe(0);
        const after = await readers(o);
        expect(after.glob).toEqual(expected);
        expect(after.manifest).toEqual(expected);
        // Completed after the manifest swap (the partition the kill struck in has one file; the other, not reached,
        // keeps its small files), rolled back before it; no temp file left.
        const swapped = !['compact:written', 'files:before-manifest'].includes(failpoint);
        if (swapped) expect(after.files).toBeLessThan(before.files);
        else expect(after.files).toBe(before.files);
        expect(after.temp).toEqual([]);
      });
});
