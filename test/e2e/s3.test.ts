/**
 * The Parquet and JSONL sinks on S3 (`path: s3://bucket/prefix/`), against a real S3-compatible server on loopback
 * (test/support/s3-server.ts) and the emulator:
 *
 * - a snapshot into Parquet and JSONL on S3 beside the same sinks on local disk, in one run, append and replace,
 *   partitioned and not: the objects read back through the S3 client hold the local files' rows (count, checksum);
 * - (`sluice run` killed with -9 at each failpoint of the S3 commit path is the sink conformance suite's, for the
 *   JSONL and Parquet sinks on S3 alike: test/sinks/conformance/crash.test.ts and its nightly soak);
 * - a commit killed inside a multipart upload (a 12 MB file): no object appears but the upload's journal, and the
 *   next open aborts exactly that upload (on a server that cannot list uploads) and leaves no object;
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { UploadPartCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { startS3Server, type S3TestServer } from '../support/s3-server.js';
import { API_KEY, ROOT, emulator, query, variant, workspace, type Obj, type Workspace } from './harness.js';

const BUCKET = 'lake';
let s3: S3TestServer;
let emu: EmulatorHandle;
const downloads: string[] = [];

beforeAll(async () => {
  [s3, emu] = await Promise.all([startS3Server(), emulator({ seed: 5, size: 2500 })]);
  await s3.createBucket(BUCKET);
}, 60_000);
afterAll(async () => {
  await emu?.close();
  await s3?.stop();
  for (const d of downloads) await rm(d, { recursive: true, force: true });
});

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
let pipelines = 0;

/** The Parquet example with `sinks`, small parts (several units), polling fast. */
function pipelineText(ws: Workspace, sinks: string[]): string {
  return variant(ws, 'snapshot_to_parquet.yaml', [
    ['name: company_profiles_parquet', `name: s3_${++pipelines}`],
    ['records_limit: 5000', 'records_limit: 2000'],
    ['batch_size: 1000 }', 'batch_size: 1000 }\n  poll: { interval_ms: 50 }'],
    [/\nsink:[\s\S]*$/, `\nsinks:\n${sinks.map((s) => `  - ${s}`).join('\n')}\n`],
  ]);
}

const s3Opts = (): string => `s3: { endpoint: '${s3.endpoint}', force_path_style: true }`;

async function runInProcess(file: string, fresh = false): Promise<void> {
  const env = { ...process.env, SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: API_KEY };
  await runPipeline(await loadPipeline(file, env), { ...quiet, fresh });
}

/** The objects under `prefix` as a listing reader finds them, downloaded into a directory (keys as paths). */
async function download(prefix: string, match: (key: string) => boolean): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sluice-s3-read-'));
  downloads.push(dir);
  for (const key of await s3.keys(BUCKET, prefix)) {
    if (!match(key)) continue;
    const file = path.join(dir, key.slice(prefix.length));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, await s3.get(BUCKET, key));
  }
  return dir;
}

interface Digest {
  rows: number;
  checksum: string;
}

function digestOf(rows: Obj[]): Digest {
  const lines = rows.map((r) => JSON.stringify(r, Object.keys(r).sort()));
  return {
    rows: rows.length,
    checksum: createHash('sha256').update(lines.sort().join('\n')).digest('hex').slice(0, 16),
  };
}

async function parquetDigest(dir: string): Promise<Digest> {
  const rows = await query(
    `SELECT * FROM read_parquet('${dir}/**/*.parquet', hive_partitioning = true, union_by_name = true)`,
  ).catch((err: Error) => (/No files found/.test(err.message) ? [] : Promise.reject(err)));
  return digestOf(
    rows.map((r) => JSON.parse(JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? Number(v) : v))) as Obj),
  );
}

async function jsonlDigest(dir: string): Promise<Digest> {
  const rows: Obj[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (/\.jsonl(\.gz)?$/.test(e.name)) {
        const buf = await readFile(p);
        const text = e.name.endsWith('.gz') ? gunzipSync(buf).toString() : buf.toString();
        for (const line of text.split('\n')) if (line) rows.push(JSON.parse(line) as Obj);
      }
    }
  };
  await walk(dir);
  return digestOf(rows);
}

const isParquet = (k: string): boolean => k.endsWith('.parquet');
const isJsonl = (k: string): boolean => /\.jsonl(\.gz)?$/.test(k);

/** Data objects a reader following the pointer or manifest finds, downloaded: `replace` reads the live generation. */
async function followManifest(prefix: string): Promise<{ dir: string; files: string[] }> {
  const pointer = JSON.parse((await s3.get(BUCKET, `${prefix}_sluice_current.json`)).toString()) as {
    manifest: string;
  };
  const manifest = JSON.parse((await s3.get(BUCKET, `${prefix}${pointer.manifest}`)).toString()) as {
    units: Record<string, { files: string[] }>;
  };
  const gen = `${prefix}${path.posix.dirname(pointer.manifest)}/`;
  const files = [...new Set(Object.values(manifest.units).flatMap((u) => u.files))];
  const dir = await download(gen, (k) => files.includes(k.slice(gen.length)));
  return { dir, files };
}

describe('Parquet and JSONL sinks on S3', () => {
  it('append: the objects hold the rows of the local sinks of the same run, partitioned', async () => {
    const ws = workspace();
    const file = ws.write(
      'append.yaml',
      pipelineText(ws, [
        `{ type: parquet, path: 's3://${BUCKET}/append/pq/', ${s3Opts()}, partition_by: [country_code] }`,
        `{ type: parquet, path: ../out/pq, partition_by: [country_code] }`,
        `{ type: jsonl, path: 's3://${BUCKET}/append/js/', ${s3Opts()} }`,
        `{ type: jsonl, path: ../out/js }`,
      ]),
    );
    await runInProcess(file);
    const local = { pq: await parquetDigest(path.join(ws.out, 'pq')), js: await jsonlDigest(path.join(ws.out, 'js')) };
    expect(local.pq.rows).toBeGreaterThan(100);
    expect(local.js).toEqual({ rows: local.pq.rows, checksum: expect.any(String) });

    expect(await parquetDigest(await download('append/pq/', isParquet))).toEqual(local.pq);
    expect(await jsonlDigest(await download('append/js/', isJsonl))).toEqual(local.js);
    // Hive partitioning as on disk; no temp or staging object left.
    const keys = await s3.keys(BUCKET, 'append/');
    expect(keys.filter(isParquet).some((k) => /^append\/pq\/country_code=[A-Z]{2}\/part-.*\.parquet$/.test(k))).toBe(
      true,
    );
    expect(keys.filter((k) => k.includes('.sluice-tmp/') || k.includes('.sluice-staged/'))).toEqual([]);
    expect(keys).toContain('append/pq/_sluice_manifest.json');
  });

  // CI (SLUICE_CRASH_MATRIX=full): `npm test` has replace on S3 in the sink conformance suite (writes.test.ts).
  it.runIf(process.env.SLUICE_CRASH_MATRIX === 'full')(
    'replace, not partitioned: the pointer switches to the new generation, which holds the local sinks’ rows',
    async () => {
      const ws = workspace();
      const file = ws.write(
        'replace.yaml',
        pipelineText(ws, [
          `{ type: parquet, path: 's3://${BUCKET}/replace/pq/', ${s3Opts()}, write: replace }`,
          `{ type: parquet, path: ../out/pq, write: replace }`,
          `{ type: jsonl, path: 's3://${BUCKET}/replace/js/', ${s3Opts()}, write: replace }`,
          `{ type: jsonl, path: ../out/js, write: replace }`,
        ]),
      );
      await runInProcess(file);
      const first = JSON.parse((await s3.get(BUCKET, 'replace/pq/_sluice_current.json')).toString()) as Obj;
      await runInProcess(file, true);
      const second = JSON.parse((await s3.get(BUCKET, 'replace/pq/_sluice_current.json')).toString()) as Obj;
      expect(second.generation).not.toBe(first.generation);

      const pq = await followManifest('replace/pq/');
      const js = await followManifest('replace/js/');
      expect(await parquetDigest(pq.dir)).toEqual(await parquetDigest(path.join(ws.out, 'pq')));
      expect(await jsonlDigest(js.dir)).toEqual(await jsonlDigest(path.join(ws.out, 'js')));
      // The old generation is gone: a listing reader of the prefix finds only the live generation's data objects.
      const keys = await s3.keys(BUCKET, 'replace/pq/');
      expect(
        keys
          .filter(isParquet)
          .map((k) => k.slice('replace/pq/'.length))
          .sort(),
      ).toEqual(pq.files.map((f) => `.sluice-generations/${String(second.generation)}/${f}`).sort());
    },
  );
});

describe('kill -9 of a run writing to S3', () => {
  it('files:mid-upload inside a multipart upload: no object appears, and the next open aborts the journaled upload and leaves nothing behind', async () => {
    // A commit of one 12 MB file (two 8 MB parts) in a child process, killed once the first part is sent.
    const dir = await mkdtemp(path.join(tmpdir(), 'sluice-s3-mpu-'));
    downloads.push(dir);
    const script = path.join(dir, 'commit.mts');
    const open = `{ root: 's3://${BUCKET}/mpu/', mode: 'append', fresh: false, pipeline: 'mpu', format: 'jsonl', label: 'mpu', log: { debug() {}, info() {}, warn() {}, error() {} } }`;
    await writeFile(
      script,
      [
        `import { writeFile } from 'node:fs/promises';`,
        `import { OutputDir } from '${path.join(ROOT, 'src/sink-kit/output-files/output-dir.ts')}';`,
        `const out = await OutputDir.open(${open} as never);`,
        `const from = out.tempPath('big');`,
        `await writeFile(from, Buffer.alloc(12 * 2 ** 20, 0x61));`,
        `await out.commit({ moves: [{ from, to: 'big.jsonl' }], apply: (m) => void (m.units.big = { records: 1, files: ['big.jsonl'], committed_at: '' }) });`,
      ].join('\n'),
    );
    // Asynchronously: the S3 server answers on this process's event loop.
    const child = await new Promise<{ signal: NodeJS.Signals | null; stderr: string }>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', script], {
        cwd: ROOT,
        env: { ...process.env, ...s3.env, SLUICE_FAILPOINTS: `files:mid-upload=${6 * 2 ** 20}` },
      });
      let stderr = '';
      p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      p.once('error', reject);
      p.once('close', (_code, signal) => resolve({ signal, stderr }));
    });
    expect(child.signal, child.stderr).toBe('SIGKILL');
    expect(child.stderr).toContain('failpoint files:mid-upload reached');
    // No object at all but the upload's journal under the temp prefix, naming the upload the kill left open.
    const left = await s3.keys(BUCKET, 'mpu/');
    expect(left).toEqual([expect.stringMatching(/^mpu\/\.sluice-tmp\/[^/]+\/0\.upload$/)]);
    const journal = JSON.parse((await s3.get(BUCKET, left[0]!)).toString()) as { key: string; upload_id: string };
    expect(await s3.uploads(BUCKET)).toContain(journal.upload_id);
    // The next open (here, in this process; the server cannot list uploads) aborts it and leaves no object.
    const { OutputDir } = await import('../../src/sink-kit/output-files/output-dir.js');
    const out = await OutputDir.open({
      root: `s3://${BUCKET}/mpu/`,
      mode: 'append',
      fresh: false,
      pipeline: 'mpu',
      format: 'jsonl',
      label: 'mpu',
      log: { debug() {}, info() {}, warn() {}, error() {} },
    });
    expect(out.committedUnits()).toEqual(new Set());
    expect(await s3.keys(BUCKET, 'mpu/')).toEqual([]);
    expect(await s3.uploads(BUCKET)).not.toContain(journal.upload_id);
    const part = s3.client.send(
      new UploadPartCommand({
        Bucket: BUCKET,
        Key: `mpu/${journal.key}`,
        UploadId: journal.upload_id,
        PartNumber: 3,
        Body: 'x',
      }),
    );
    await expect(part).rejects.toMatchObject({ name: 'NoSuchUpload' });
  });
});
