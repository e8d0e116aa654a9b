/**
 * `sluice compact`: nights of small files (one in-process run of a file-source pipeline per night, each publishing a
 * small file per partition) rewritten into target-size files, local and on a real S3-compatible server. The dataset
 * reads the same before and after (DuckDB: rows and types, hive partitions; JSONL: the lines), the units stay
 * committed with their checkpoints (the next run loads nothing again), a kill -9 at each compaction failpoint leaves
 * the dataset equal and a rerun completes with nothing left over, and a run holding the output's lock refuses it.
 *
 * `npm test`: a few nights (Parquet local, JSONL local and on S3), kills at two failpoints on local disk.
 * `SLUICE_COMPACT=full` (CI): thirty nights, Parquet on S3 too, every failpoint on local disk and on S3.
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactPipeline } from '../../src/operations/compact.js';
import { runPipeline } from '../../src/operations/run.js';
import { acquireRunLock } from '../../src/state/run-lock.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { EXIT_CODES } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/types.js';
import { COMPACT_FAILPOINTS, compactKilled } from './compact-failpoints.js';
import { startS3Server, type S3TestServer } from '../support/s3-server.js';

const FULL = process.env.SLUICE_COMPACT === 'full';
const NIGHTS = FULL ? 30 : 5;
const ROWS = 40;
const BUCKET = 'compact';

type Kind = 'parquet' | 'jsonl' | 'jsonl-gz';
type Storage = 'local' | 's3';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

let s3: S3TestServer | undefined;
let conn: DuckDBConnection;
const dirs: string[] = [];
beforeAll(async () => {
  conn = await (await DuckDBInstance.create(':memory:')).connect();
  await conn.run(`SET TimeZone = 'UTC'`);
});
afterAll(async () => {
  conn?.closeSync();
  await s3?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function server(): Promise<S3TestServer> {
  if (!s3) {
    s3 = await startS3Server();
    await s3.createBucket(BUCKET);
  }
  return s3;
}

interface Output {
  dir: string;
  file: string;
  kind: Kind;
  storage: Storage;
  prefix: string;
}

let outputs = 0;

/**
 * A pipeline of the file source into one sink, and the small files of `n` nights in its output: with `runs`, one
 * run per night, each with a new input file (each run's last publish makes a small file per partition); without,
 * the cheap way for `npm test`: one run over the `n` files with a tiny target size (every unit published as a file
 * of its own), and then the target raised to its default, as an owner who finds the files too small would.
 */
async function nights(kind: Kind, storage: Storage, n: number, runs = FULL): Promise<Output> {
  const dir = mkdtempSync(path.join(tmpdir(), `sluice-compact-${kind}-`));
  dirs.push(dir);
  const prefix = `o${++outputs}/`;
  const where = storage === 'local' ? 'out' : `s3://${BUCKET}/${prefix}`;
  const s3opts = storage === 's3' ? { s3: { endpoint: (await server()).endpoint, force_path_style: true } } : {};
  const file = path.join(dir, 'nightly.yaml');
  const write = (tiny: boolean): void => {
    const sink =
      kind === 'parquet'
        ? { type: 'parquet', path: where, partition_by: ['country'], ...s3opts, ...(tiny && { file_size_bytes: 100 }) }
        : {
            type: 'jsonl',
            path: where,
            compress: kind === 'jsonl-gz',
            ...s3opts,
            ...(tiny && { target_file_mb: 1e-4 }),
          };
    const doc = {
      version: 1,
      name: 'nightly',
      service: { base_url: 'emulator', api_key: 'k' },
      source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 },
      sinks: [sink],
    };
    writeFileSync(file, JSON.stringify(doc));
  };
  mkdirSync(path.join(dir, 'in'));
  const out = { dir, file, kind, storage, prefix };
  write(!runs);
  if (runs)
    for (let night = 1; night <= n; night++) {
      writeNight(dir, night);
      expect((await run(out)).records).toBe(ROWS);
    }
  else {
    for (let night = 1; night <= n; night++) writeNight(dir, night);
    expect((await run(out)).records).toBe(n * ROWS);
    write(false);
  }
  return out;
}

/** A night's input: two partitions; a column that widens (integer, then double) and one that appears later. */
function writeNight(dir: string, night: number): void {
  const rows = Array.from({ length: ROWS }, (_, i) => ({
    id: `n${night}-${i}`,
    country: i % 2 === 0 ? 'US' : 'DE',
    night,
    score: night > 2 ? i + 0.5 : i,
    at: `2025-03-${String((night % 28) + 1).padStart(2, '0')}T02:30:00Z`,
    tags: [`t${i % 3}`],
    meta: { rank: i, src: 'x' },
    ...(night > 3 && { extra: `e${i}` }),
  }));
  writeFileSync(
    path.join(dir, 'in', `night-${String(night).padStart(2, '0')}.jsonl`),
    rows.map((r) => `${JSON.stringify(r)}\n`).join(''),
  );
}

async function run(o: Output): Promise<{ records: number }> {
  const p = await loadPipeline(o.file, process.env);
  const s = await runPipeline(p, { fresh: false, logFormat: 'text', quiet: true, progress: false }, { log: quiet });
  return { records: s.records };
}

/** The output as a reader finds it: the local directory, or the S3 prefix copied down key by key. */
async function readable(o: Output): Promise<string> {
  if (o.storage === 'local') return path.join(o.dir, 'out');
  const local = path.join(o.dir, `.s3-read-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  for (const key of await s3!.keys(BUCKET, o.prefix)) {
    const to = path.join(local, key.slice(o.prefix.length));
    mkdirSync(path.dirname(to), { recursive: true });
    writeFileSync(to, await s3!.get(BUCKET, key));
  }
  return local;
}

/** Data files a listing reader finds (temp, staging and manifest never match). */
function dataFiles(root: string, o: Output): string[] {
  const pattern = o.kind === 'parquet' ? /\.parquet$/ : /\.jsonl(\.gz)?$/;
  return (readdirSync(root, { recursive: true }) as string[]).filter(
    (f) => pattern.test(f) && !f.startsWith('.sluice'),
  );
}

interface Dataset {
  files: number;
  rows: string[];
  types: Record<string, string>;
}

/** What a reader gets: Parquet through DuckDB (hive partitions, union by name), JSONL as its lines. */
async function dataset(o: Output): Promise<Dataset> {
  const root = await readable(o);
  const files = dataFiles(root, o).length;
  const glob = path.join(root, '**', o.kind === 'parquet' ? '*.parquet' : '*.jsonl*').replace(/'/g, "''");
  const from =
    o.kind === 'parquet'
      ? `read_parquet('${glob}', hive_partitioning = true, union_by_name = true)`
      : `read_json_auto('${glob}', format = 'newline_delimited', union_by_name = true)`;
  const desc = await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${from}`);
  const types = Object.fromEntries(desc.getRowObjectsJS().map((r) => [String(r.column_name), String(r.column_type)]));
  if (o.kind !== 'parquet') {
    // JSONL: the lines themselves, byte for byte (gunzip reads every member of a joined file).
    const lines = dataFiles(root, o).flatMap((f) => {
      const bytes = readFileSync(path.join(root, f));
      return (f.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8').split('\n').filter(Boolean);
    });
    return { files, rows: lines.sort(), types };
  }
  const rows = await conn.runAndReadAll(`SELECT to_json(t)::VARCHAR AS j FROM ${from} t`);
  return {
    files,
    rows: rows
      .getRowObjectsJS()
      .map((r) => String(r.j))
      .sort(),
    types,
  };
}

async function compact(o: Output) {
  const p = await loadPipeline(o.file, process.env);
  return compactPipeline(p, { log: quiet, command: 'test' });
}

const CASES: { kind: Kind; storage: Storage }[] = [
  { kind: 'parquet', storage: 'local' },
  { kind: 'jsonl', storage: 'local' },
  { kind: 'jsonl-gz', storage: 'local' },
  // On S3 in npm test the cheaper JSONL (Parquet stages every unit in the bucket too); CI compacts both.
  { kind: 'jsonl-gz', storage: 's3' },
  ...(FULL ? [{ kind: 'parquet' as const, storage: 's3' as const }] : []),
];

describe('sluice compact: small files of many nights → target-size files, the dataset equal', () => {
  for (const { kind, storage } of CASES)
    it(`${kind} ${storage}: ${NIGHTS} nights`, { timeout: FULL ? 900_000 : 120_000 }, async () => {
      const o = await nights(kind, storage, NIGHTS);
      const before = await dataset(o);
      const perNight = kind === 'parquet' ? 2 : 1;
      expect(before.files).toBe(NIGHTS * perNight);
      expect(before.rows).toHaveLength(NIGHTS * ROWS);

      const [result] = await compact(o);
      const after = await dataset(o);
      expect(after.files).toBe(perNight);
      expect(result).toMatchObject({ filesBefore: before.files, filesAfter: perNight, replaced: before.files });
      expect(after.rows).toEqual(before.rows);
      expect(after.types).toEqual(before.types);
      if (FULL) console.log(`${kind} ${storage}: ${before.files} → ${after.files} files, ${after.rows.length} rows`);

      // The units stay committed with their checkpoints: the next night loads its file only.
      writeNight(o.dir, NIGHTS + 1);
      expect((await run(o)).records).toBe(ROWS);
      expect((await dataset(o)).rows).toHaveLength((NIGHTS + 1) * ROWS);
      // A second compaction finds the new night's files small and folds them in.
      await compact(o);
      expect((await dataset(o)).files).toBe(perNight);
    });
});

describe('compact_after: compaction at the end of a run', () => {
  it('rewrites the small files once a run leaves as many as it says', async () => {
    const o = await nights('jsonl', 'local', 2, true);
    const doc = JSON.parse(readFileSync(o.file, 'utf8')) as { sinks: Record<string, unknown>[] };
    doc.sinks[0]!.compact_after = 3;
    writeFileSync(o.file, JSON.stringify(doc));
    const before = await dataset(o);
    expect(before.files).toBe(2);
    writeNight(o.dir, 3);
    expect((await run(o)).records).toBe(ROWS);
    const after = await dataset(o);
    expect(after.files).toBe(1);
    expect(after.rows).toHaveLength(3 * ROWS);
    expect(after.rows).toEqual(expect.arrayContaining(before.rows));
  });
});

describe('sluice compact: the output’s lock', () => {
  it('refuses (exit 3) while a run holds the output', async () => {
    const o = await nights('jsonl', 'local', 2);
    const lock = await acquireRunLock(path.join(o.dir, 'out', '.sluice-lock'), { command: 'sluice run', log: quiet });
    try {
      await expect(compact(o)).rejects.toMatchObject({ name: 'LockedError', exitCode: EXIT_CODES.locked });
    } finally {
      await lock.release();
    }
    expect((await dataset(o)).files).toBe(2);
  });
});

const KILLS: { storage: Storage; failpoint: string }[] = FULL
  ? (['local', 's3'] as const).flatMap((storage) => COMPACT_FAILPOINTS.map((failpoint) => ({ storage, failpoint })))
  : [
      { storage: 'local', failpoint: 'files:after-manifest' },
      { storage: 'local', failpoint: 'compact:after-remove' },
    ];

let template: Promise<Output> | undefined;
/** One local output of three nights for every local kill: each test compacts a copy of it. */
function killTemplate(): Promise<Output> {
  return (template ??= nights('parquet', 'local', 3));
}

function copyOf(o: Output): Output {
  const dir = mkdtempSync(`${o.dir}-copy-`);
  dirs.push(dir);
  cpSync(o.dir, dir, { recursive: true, preserveTimestamps: true });
  return { ...o, dir, file: path.join(dir, path.basename(o.file)) };
}

describe('sluice compact: kill -9 mid-compaction', () => {
  for (const { storage, failpoint } of KILLS)
    it(
      `parquet ${storage}, killed at ${failpoint}: the dataset equal, a rerun completes`,
      { timeout: FULL ? 900_000 : 120_000 },
      async () => {
        const o = storage === 'local' ? copyOf(await killTemplate()) : await nights('parquet', storage, 3);
        const before = await dataset(o);
        const killed = await compactKilled(o.file, o.dir, failpoint);
        expect(killed.died, killed.stderr).toBe(true);
        const seen = await dataset(o);
        if (failpoint === 'files:after-rename' || failpoint === 'compact:after-remove') {
          // Between the new files' arrival and the old ones' removal a listing reader finds both (README): every
          // row is there, and nothing that was not.
          expect([...new Set(seen.rows)].sort()).toEqual(before.rows);
        } else {
          // Before any file moves: a listing reader sees the old files.
          expect(seen.rows).toEqual(before.rows);
        }
        const [result] = await compact(o);
        const after = await dataset(o);
        expect(after.rows).toEqual(before.rows);
        expect(after.types).toEqual(before.types);
        expect(after.files).toBe(2);
        expect(result!.filesAfter).toBe(2);
        // Nothing left over: no temp file, no old file.
        const root = await readable(o);
        const all = readdirSync(root, { recursive: true }) as string[];
        expect(all.filter((f) => f.startsWith('.sluice-tmp/') && f !== '.sluice-tmp/')).toEqual([]);
      },
    );
});
