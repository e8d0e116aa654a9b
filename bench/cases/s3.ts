/**
 * The Parquet sink on S3, part of `npm run bench` (or alone: `npx tsx bench/cases/s3.ts [--records N]`):
 *
 *   sluice .jsonl.gz → parquet (local)   the workload's parts through a pipeline — `file` source,
 *                                        `normalize: company_profile`, parquet sink on local disk;
 *   sluice .jsonl.gz → parquet (S3)      the same into `s3://bench/parquet/` on an S3-compatible server on loopback
 *                                        (test/support/s3-server.ts: s3rver, which stores objects as local files).
 *
 * Each in a child process of its own; the ratio is what the object store's protocol costs (uploads, the manifest
 * object, server-side copies) over renames on one disk. s3rver is no real store: the ratio is an upper bound of the
 * protocol's cost on this machine, not a network measurement.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../src/core/types.js';
import { caseMain, isCaseChild, runCase, type CaseFn, type CaseResult } from '../lib/child.js';
import { formatTable } from '../lib/table.js';
import { WORK_DIR, prepareWorkload } from '../lib/workload.js';

interface Args {
  partsDir: string;
  outDir: string;
  concurrency: number;
  /** The sink's `path` (a directory under outDir, or an s3:// URL) and, for S3, the server. */
  sinkPath: string;
  endpoint?: string;
}

const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (m) => process.stderr.write(`${m}\n`),
};

const parquetCase: CaseFn<Args> = async (a) => {
  const { loadPipeline } = await import('../../src/pipeline/load.js');
  const { runPipeline } = await import('../../src/engine/run.js');
  const file = path.join(a.outDir, 'bench.yaml');
  const config = {
    version: 1,
    name: 'bench_s3',
    service: { base_url: 'emulator', api_key: 'bench' },
    source: { type: 'file', paths: [a.partsDir], format: 'jsonl', concurrency: a.concurrency },
    transforms: [{ type: 'normalize', preset: 'company_profile' }],
    sink: {
      type: 'parquet',
      path: a.sinkPath,
      ...(a.endpoint && { s3: { endpoint: a.endpoint, force_path_style: true } }),
    },
  };
  // JSON is YAML.
  await writeFile(file, JSON.stringify(config, null, 2));
  const pipeline = await loadPipeline(file, {});
  return async () => {
    const summary = await runPipeline(
      pipeline,
      { fresh: true, logFormat: 'text', quiet: true, progress: false },
      { log: silent },
    );
    if (summary.deadLetters > 0) throw new Error(`${summary.deadLetters} dead letters`);
    return { records: summary.records };
  };
};

const CASES: Record<string, CaseFn<Args>> = { 'sluice-parquet-local': parquetCase, 'sluice-parquet-s3': parquetCase };

export interface S3BenchOptions {
  records: number;
  concurrency: number;
  nodeFlags?: string[];
}

/** Runs both cases and prints their table; false when a case failed to run. */
export async function runS3Bench(o: S3BenchOptions): Promise<boolean> {
  const w = await prepareWorkload(o.records, ['parts'], console.log);
  // The child inherits the server's credentials through the environment startS3Server sets.
  const { startS3Server } = await import('../../test/support/s3-server.js');
  const server = await startS3Server();
  const outDir = await mkdtemp(path.join(WORK_DIR, 'out-s3-'));
  try {
    await server.createBucket('bench');
    const base = { partsDir: w.partsDir, outDir, concurrency: o.concurrency };
    const results: [string, CaseResult][] = [];
    for (const [name, label, sinkPath, endpoint] of [
      ['sluice-parquet-local', 'sluice .jsonl.gz → parquet (local disk)', path.join(outDir, 'parquet'), undefined],
      ['sluice-parquet-s3', 'sluice .jsonl.gz → parquet (S3, loopback)', 's3://bench/parquet/', server.endpoint],
    ] as const) {
      const r = await runCase(import.meta.url, name, { ...base, sinkPath, endpoint }, o.nodeFlags ?? []);
      if (r.records !== w.records) throw new Error(`${name} counted ${r.records}, not ${w.records}`);
      results.push([label, r]);
    }
    const local = results[0]![1];
    console.log(
      formatTable([
        ['case', 's', 'CPU s', 'rec/s', 'peak RSS', '× local'],
        ...results.map(([label, r]) => [
          label,
          r.seconds.toFixed(2),
          r.cpuSeconds.toFixed(2),
          Math.round(r.records / r.seconds).toLocaleString('en'),
          `${r.peakRssMb.toFixed(0)} MB`,
          `${(r.seconds / local.seconds).toFixed(2)}×`,
        ]),
      ]),
    );
    const keys = await server.keys('bench', 'parquet/');
    console.log(
      `S3: ${keys.filter((k) => k.endsWith('.parquet')).length} Parquet object(s) and the manifest; the server ` +
        '(s3rver, in the parent process) shares the two cores, its CPU is not in the S3 case’s CPU s.',
    );
    return true;
  } catch (err) {
    console.log(`s3: ${(err as Error).message}`);
    return false;
  } finally {
    await server.stop();
    await rm(outDir, { recursive: true, force: true });
  }
}

if (isCaseChild(import.meta.url)) await caseMain(CASES);
else if (process.argv[1] === new URL(import.meta.url).pathname) {
  const i = process.argv.indexOf('--records');
  const records = i > 0 ? Number(process.argv[i + 1]) : 200_000;
  if (!(await runS3Bench({ records, concurrency: 2 }))) process.exitCode = 1;
}
