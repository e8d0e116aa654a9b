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
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { caseMain, isCaseChild, runCase, type CaseFn, type CaseResult } from '../lib/child.js';
import { NORMALIZE_COMPANY_PROFILES, partsPipelineCase, recordsArg, throughput } from '../lib/pipeline-case.js';
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

const parquetCase: CaseFn<Args> = (a) =>
  partsPipelineCase({
    name: 'bench_s3',
    partsDir: a.partsDir,
    outDir: a.outDir,
    concurrency: a.concurrency,
    transforms: NORMALIZE_COMPANY_PROFILES,
    sink: {
      type: 'parquet',
      path: a.sinkPath,
      ...(a.endpoint && { s3: { endpoint: a.endpoint, force_path_style: true } }),
    },
  });

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
    const results: [string, CaseResult, number | undefined][] = [];
    for (const [name, label, sinkPath, endpoint] of [
      ['sluice-parquet-local', 'sluice .jsonl.gz → parquet (local disk)', path.join(outDir, 'parquet'), undefined],
      ['sluice-parquet-s3', 'sluice .jsonl.gz → parquet (S3, loopback)', 's3://bench/parquet/', server.endpoint],
    ] as const) {
      // The parent only waits meanwhile (the first case also compiles the project): its CPU in the S3 case is the
      // S3 server's.
      const parentCpu = process.cpuUsage();
      const r = await runCase(import.meta.url, name, { ...base, sinkPath, endpoint }, o.nodeFlags ?? []);
      const { user, system } = process.cpuUsage(parentCpu);
      if (r.records !== w.records) throw new Error(`${name} counted ${r.records}, not ${w.records}`);
      results.push([label, r, endpoint === undefined ? undefined : (user + system) / 1e6]);
    }
    const [, local] = results[0]!;
    console.log(
      formatTable([
        ['case', 's', 'CPU s', 'server CPU s', 'rec/s', 'MB/s', 'peak RSS', '× local', 'CPU × local'],
        ...results.map(([label, r, serverCpu]) => {
          const { recPerS, mbPerS } = throughput(r.records, w.jsonlBytes, r.seconds);
          return [
            label,
            r.seconds.toFixed(2),
            r.cpuSeconds.toFixed(2),
            serverCpu?.toFixed(2) ?? '',
            recPerS,
            mbPerS,
            `${r.peakRssMb.toFixed(0)} MB`,
            `${(r.seconds / local.seconds).toFixed(2)}×`,
            `${((r.cpuSeconds + (serverCpu ?? 0)) / local.cpuSeconds).toFixed(2)}×`,
          ];
        }),
      ]),
    );
    const keys = await server.keys('bench', 'parquet/');
    console.log(
      `S3: ${keys.filter((k) => k.endsWith('.parquet')).length} Parquet object(s) and the manifest. ${w.records.toLocaleString('en')} ` +
        `records, ${(w.jsonlBytes / 1e6).toFixed(0)} MB as JSONL; MB/s: those bytes per wall second. CPU s and peak ` +
        'RSS are the sluice process’s; server CPU s the S3 server’s (s3rver, in this parent process, which only waits ' +
        'meanwhile); CPU × local: both together against the local case’s CPU s, steadier than wall time on a shared ' +
        'machine.',
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
  if (!(await runS3Bench({ records: recordsArg(), concurrency: 2 }))) process.exitCode = 1;
}
