/**
 * Shards as a first-class mode: `sluice prepare` starts the filter job once; four `sluice run --shard auto`
 * processes (Kubernetes-style JOB_COMPLETION_INDEX) started together on one machine share the pipeline's state
 * directory and write one output directory, one `s3://` prefix and one Postgres table, and together give the
 * single run's rows. On S3 the shards write hive-partitioned Parquet under SLUICE_CRASH_MATRIX=full (CI), JSONL in
 * the default run (four processes loading DuckDB cost `npm test` ~15 s more; the partitioned flat layout of shards
 * is checked in process by test/sinks/parquet/sink.test.ts). Both file outputs have the single run's layout — data files directly
 * under the path, partition directories included — and one manifest per shard. One shard killed with -9 and run
 * again alone completes the set; `sluice finalize` says so only then.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { inShard } from '../../src/unit/run-units.js';
import { api, API_KEY, emulator, query, runInProcess, sluice, workspace } from './harness.js';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from '../cli/memory-io.js';
import { hasPostgres, startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { startS3Server, type S3TestServer } from '../support/s3-server.js';

const SHARDS = 4;

const BUCKET = 'lake';
/** What the shards write to S3 (see the header). */
const S3_PARQUET = process.env.SLUICE_CRASH_MATRIX === 'full';
const isS3Data = (k: string): boolean => (S3_PARQUET ? k.endsWith('.parquet') : k.endsWith('.jsonl'));

/**
 * The pipeline into one directory, and (`pgUrl`: a database) into one Postgres table as well; `s3Prefix`: under
 * that prefix of the test's S3 server too (partitioned Parquet or JSONL: S3_PARQUET).
 */
const pipeline = (pgUrl?: string, s3Prefix?: string): string => `version: 1
name: scale_out
service:
  base_url: \${SLUICE_BASE_URL}
  api_key: \${SLUICE_API_KEY}
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>=', value: 0 }
  records_limit: 4500
  download: { format: jsonl, compress: true, batch_size: 1000 }
  poll: { interval_ms: 50 }
sinks:
  - { type: jsonl, path: ../out/companies, write: append }
${pgUrl ? `  - { type: postgres, url: '${pgUrl}', table: companies, write: append }\n` : ''}${
  s3Prefix
    ? `  - { type: ${S3_PARQUET ? 'parquet' : 'jsonl'}, path: 's3://${BUCKET}/${s3Prefix}/',${S3_PARQUET ? ' partition_by: [country_code],' : ''} s3: { endpoint: '${s3.endpoint}', force_path_style: true } }\n`
    : ''
}`;
const PIPELINE = pipeline();

let emu: EmulatorHandle;
let pg: PostgresServer;
let s3: S3TestServer;
const downloads: string[] = [];
/** Without PostgreSQL here (named at the top of the run), the test that loads Postgres too is skipped. */
const withPostgres = hasPostgres();
beforeAll(async () => {
  [emu, s3] = await Promise.all([emulator({ seed: 11, size: 6000 }), startS3Server()]);
  await s3.createBucket(BUCKET);
  if (!withPostgres) return;
  pg = await startPostgres();
  await Promise.all([pg.createDatabase('single'), pg.createDatabase('shards')]);
}, 120_000);
afterAll(async () => {
  await emu?.close();
  pg?.stop();
  await s3?.stop();
  for (const d of downloads) await rm(d, { recursive: true, force: true });
});

/** The objects under `prefix`, downloaded into a directory (keys as paths): what a listing reader finds. */
async function download(prefix: string): Promise<{ dir: string; keys: string[] }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sluice-shards-s3-'));
  downloads.push(dir);
  const keys = (await s3.keys(BUCKET, prefix)).map((k) => k.slice(prefix.length));
  for (const key of keys) {
    const file = path.join(dir, key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, await s3.get(BUCKET, `${prefix}${key}`));
  }
  return { dir, keys };
}

/** JSON with every object's keys sorted, at every depth: files may order columns and struct fields differently. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/**
 * The rows of every data file under `dir` (Parquet: partition columns from the directory names): their count and a
 * checksum of their sorted canonical JSON. DuckDB renders Parquet rows as JSON: converting nested rows to JS objects
 * is slow.
 */
async function s3Digest(dir: string): Promise<{ rows: number; checksum: string }> {
  const json = S3_PARQUET
    ? (
        await query(
          `SELECT to_json(t)::VARCHAR AS j FROM read_parquet('${dir}/**/*.parquet', hive_partitioning = true, union_by_name = true) t`,
        )
      ).map((r) => r.j as string)
    : records(dir);
  const lines = json.map((j) => canonical(JSON.parse(j))).sort();
  return { rows: lines.length, checksum: createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16) };
}

/** A Postgres table's rows as sorted JSON. */
async function tableRows(database: string): Promise<string[]> {
  const rows = await pg.query<{ r: string }>(database, `SELECT to_jsonb(t)::text AS r FROM companies t`);
  return rows.map((x) => x.r).sort();
}

const env = () => ({ SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: API_KEY });

async function cli(args: string[], extraEnv: Record<string, string> = {}) {
  const io = memoryIo({ ...env(), ...extraEnv });
  const code = await runCli(args, io);
  return { code, stdout: io.stdout.join('\n'), stderr: io.stderr.join('\n') };
}

/** Every record line of the data files under `dir` (not the hidden temp, staging or state entries), sorted. */
function records(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.jsonl(\.gz)?$/.test(e.name)) {
        const buf = readFileSync(p);
        const text = (e.name.endsWith('.gz') ? gunzipSync(buf) : buf).toString('utf8');
        out.push(...text.split('\n').filter((l) => l.trim() !== ''));
      }
    }
  };
  walk(dir);
  return out.map((l) => JSON.stringify(JSON.parse(l))).sort();
}

const paidFilters = async (): Promise<number> =>
  ((await api(emu, 'GET', '/_emulator/counters')) as { paid: Record<string, number> }).paid.filter ?? 0;

describe('shards of a prepared job', () => {
  it.skipIf(!withPostgres)(
    'prepare once, four shard processes at once into one directory, one S3 prefix and one Postgres table = the single run; a killed shard rerun completes the set',
    async () => {
      // The single run, for reference (it pays for its own filter job).
      const single = workspace();
      await runInProcess(single.write('scale_out.yaml', pipeline(pg.url('single'), 'single')), emu);
      const expected = records(path.join(single.out, 'companies'));
      expect(expected.length).toBe(4500);
      const singleS3 = await download('single/');

      const ws = workspace();
      const file = ws.write('scale_out.yaml', pipeline(pg.url('shards'), 'shards'));
      const before = await paidFilters();
      const prep = await cli(['prepare', file, '--shards', String(SHARDS), '--json', '--quiet']);
      expect(prep.code, prep.stderr).toBe(0);
      const prepared = JSON.parse(prep.stdout) as { id: string; units: number; paidJobs: { kind: string }[] };
      expect(prepared.paidJobs.map((j) => j.kind)).toEqual(['filter']);
      // 5 parts: every one of the 4 shards has work, and one has two (the one killed after its first commit).
      expect(prepared.units).toBe(5);
      expect(await paidFilters()).toBe(before + 1);
      const output = path.join(ws.out, 'companies');
      expect(existsSync(path.join(output, '.sluice-prepared.json')), 'the record next to the output').toBe(true);

      // The shard with the most parts is the one killed after its first commit.
      const partsOf = (i: number) =>
        Array.from({ length: prepared.units }, (_, k) => ({ id: '', params: { shard_key: `part:${k + 1}` } })).filter(
          (u) => inShard(u, { index: i, count: SHARDS }),
        ).length;
      const victim = [...Array(SHARDS).keys()].sort((a, b) => partsOf(b) - partsOf(a))[0]!;
      expect(partsOf(victim)).toBeGreaterThan(1);

      const runs = [...Array(SHARDS).keys()].map((i) =>
        sluice(['run', file, '--shard', 'auto', '--shard-count', String(SHARDS), '--no-progress'], {
          service: emu,
          env: {
            JOB_COMPLETION_INDEX: String(i),
            ...(i === victim && { SLUICE_FAILPOINTS: 'engine:after-commit' }),
          },
        }),
      );
      const results = await Promise.all(runs);
      results.forEach((r, i) => {
        if (i === victim) expect(r.signal, r.stderr).toBe('SIGKILL');
        else expect(r.code, `shard ${i}: ${r.stderr}`).toBe(0);
      });
      for (const r of results) expect(r.stderr).not.toMatch(/ENOENT|locked/);

      const partial = await cli(['finalize', file]);
      expect(partial.code).toBe(1);
      expect(partial.stderr).toContain(`shard(s) of ${prepared.id} have not committed: ${victim}/${SHARDS}`);
      expect(partial.stdout).toMatch(new RegExp(`shard ${victim}/${SHARDS}\\s+crashed`));
      expect(existsSync(path.join(output, '_sluice_shards.json')), 'no record of an incomplete set').toBe(false);

      const rerun = await sluice(['run', file, '--shard', `${victim}/${SHARDS}`, '--no-progress'], { service: emu });
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stderr).toMatch(/resuming scale_out/);

      const done = await cli(['finalize', file]);
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout).toContain(`${SHARDS}/${SHARDS} shard(s) committed — complete`);
      // The complete set's manifests, next to each file output, for readers that follow manifests.
      const manifests = [...Array(SHARDS).keys()].map((i) => `_sluice_manifest.shard-${i}-of-${SHARDS}.json`);
      const record = JSON.parse(readFileSync(path.join(output, '_sluice_shards.json'), 'utf8')) as {
        prepared: string;
        manifests: string[];
      };
      expect(record).toMatchObject({ prepared: prepared.id, manifests });
      expect(done.stdout).toContain(`wrote s3://${BUCKET}/shards/_sluice_shards.json`);
      const runsOut = await cli(['runs', file]);
      expect(runsOut.stdout).toContain(`${SHARDS}/${SHARDS} shard(s) committed`);

      expect(records(output)).toEqual(expected);
      // One directory, the single run's layout: data files directly in it, a manifest per shard, no sub-directories.
      const entries = readdirSync(output).filter((n) => !n.startsWith('.'));
      expect(entries.filter((n) => n.startsWith('_sluice_')).sort()).toEqual([...manifests, '_sluice_shards.json']);
      const dataFiles = entries.filter((n) => !n.startsWith('_sluice_'));
      expect(dataFiles.length).toBeGreaterThanOrEqual(SHARDS);
      expect(
        dataFiles.every((n) => /^part-shard-\d-of-4-.*\.jsonl$/.test(n)),
        dataFiles.join(' '),
      ).toBe(true);

      // One S3 prefix: the single run's rows and layout (Parquet: its partitions), every shard's manifest beside them.
      const sharded = await download('shards/');
      const digest = await s3Digest(sharded.dir);
      expect(digest.rows).toBe(4500);
      expect(digest).toEqual(await s3Digest(singleS3.dir));
      const layout = (keys: string[]) => new Set(keys.filter(isS3Data).map((k) => path.posix.dirname(k)));
      expect(layout(sharded.keys)).toEqual(layout(singleS3.keys));
      if (S3_PARQUET) expect([...layout(sharded.keys)].every((d) => /^country_code=[^/]+$/.test(d))).toBe(true);
      expect(sharded.keys.filter(isS3Data).every((k) => /(^|\/)part-shard-\d-of-4-/.test(k))).toBe(true);
      expect(sharded.keys.filter((k) => !isS3Data(k)).sort()).toEqual([
        '.sluice-prepared.json',
        ...manifests,
        '_sluice_shards.json',
      ]);
      // A reader following the manifests finds exactly the data objects a listing reader finds.
      const listed = manifests.flatMap((m) =>
        Object.values(
          (
            JSON.parse(readFileSync(path.join(sharded.dir, m), 'utf8')) as {
              units: Record<string, { files: string[] }>;
            }
          ).units,
        ).flatMap((u) => u.files),
      );
      expect([...new Set(listed)].sort()).toEqual(sharded.keys.filter(isS3Data).sort());
      const table = await tableRows('shards');
      expect(table.length).toBe(4500);
      expect(table).toEqual(await tableRows('single'));
      // The shards downloaded the prepared snapshot: no filter job of their own.
      expect(await paidFilters()).toBe(before + 1);
    },
    150_000,
  );

  it('a shard run again after it completed commits nothing twice', async () => {
    const ws = workspace();
    const file = ws.write('scale_out.yaml', PIPELINE);
    expect((await cli(['prepare', file, '--quiet'])).code).toBe(0);
    const first = await cli(['run', file, '--shard', '1/2', '--no-progress', '--quiet']);
    expect(first.code, first.stderr).toBe(0);
    const rows = records(path.join(ws.out, 'companies'));
    expect(rows.length).toBeGreaterThan(0);
    const again = await cli(['run', file, '--shard', '1/2', '--no-progress', '--quiet']);
    expect(again.code, again.stderr).toBe(0);
    expect(records(path.join(ws.out, 'companies'))).toEqual(rows);
    const missing = await cli(['finalize', file, '--shard-count', '2']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not committed: 0\/2/);
    expect(missing.stdout).toMatch(/shard 0\/2\s+not started/);
  }, 90_000);
});

describe('sluice prepare', () => {
  it('a file sink with write: replace is refused before the paid job, and so is a shard of it, saying what to do', async () => {
    const ws = workspace();
    const file = ws.write('scale_out.yaml', PIPELINE.replace('write: append', 'write: replace'));
    const before = await paidFilters();
    const prep = await cli(['prepare', file, '--shards', '2']);
    expect(prep.code).not.toBe(0);
    expect(prep.stderr).toMatch(/jsonl sink: `write: replace` does not work with shards/);
    expect(prep.stderr).toMatch(/fix: use `write: append` \(or `merge`\) into a fresh path or table per load/);
    const run = await cli(['run', file, '--shard', '0/2', '--no-progress']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/`write: replace` does not work with shards/);
    expect(await paidFilters()).toBe(before);
    expect(existsSync(path.join(ws.out, 'companies'))).toBe(false);
  });

  it('killed after the filter job started, run again: reuses that job, never pays twice', async () => {
    const ws = workspace();
    const file = ws.write('scale_out.yaml', PIPELINE);
    const before = await paidFilters();
    const killed = await sluice(['prepare', file], {
      service: emu,
      env: { SLUICE_FAILPOINTS: 'snapshot:job-checkpointed' },
    });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(await paidFilters()).toBe(before + 1);
    const again = await cli(['prepare', file]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^prepared scale_out \(\S+\): reused filter snap_\w+; 5 unit\(s\)/);
    expect(await paidFilters()).toBe(before + 1);
  }, 90_000);
});

describe('--shard auto', () => {
  it.each([
    [{}, [], /no shard index in the environment/],
    [{ JOB_COMPLETION_INDEX: '1' }, [], /the number of shards is not given/],
    [{ JOB_COMPLETION_INDEX: '4' }, ['--shard-count', '4'], /JOB_COMPLETION_INDEX=4 is out of range for 4 shard\(s\)/],
    [{ SLUICE_SHARD_INDEX: 'x', SLUICE_SHARD_COUNT: '2' }, [], /SLUICE_SHARD_INDEX is "x", not a whole number/],
  ] as const)('%j %j: exit 2 with what to set', async (vars, extra, message) => {
    const ws = workspace();
    const file = ws.write('scale_out.yaml', PIPELINE);
    const r = await cli(['run', file, '--shard', 'auto', ...extra, '--no-progress'], vars);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/fix: /);
  });
});
