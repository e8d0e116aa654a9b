/**
 * Four shards behind one address beside one process, part of `npm run bench` (or alone:
 * `npx tsx bench/cases/shards.ts [--records N]`; default 100,000):
 *
 *   one process          `sluice run` of a snapshot pipeline (the paid filter job, then its parts downloaded as
 *                        gzipped JSONL of 10k records, loaded into one Parquet output) against an emulator on loopback;
 *   prepare + 4 shards   `sluice prepare --shards 4`, then four `sluice run --shard i/4` processes at once, into the
 *                        one output, sharing the 429 budget through the pipeline's state directory;
 *   4 shards, 429s       the same against an emulator answering 429 to half of the shards' downloads (the prepare's
 *                        job and polls answered): the most answers of 429 in any five minutes the emulator counted
 *                        for the one IP (≤ 20), and whether it blocked it (test/e2e/shards-budget.test.ts refuses
 *                        half of every request of a crawl's shards).
 *
 * Every process is the real CLI (the project's TypeScript compiled to plain JavaScript, bench/lib/transpile.ts) in a
 * process of its own; the emulator runs in this one, as the service would elsewhere. On a machine of c cores, four
 * CPU-bound shards can take at best about 1/min(4, c) of the one process's time.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { recordsArg } from '../lib/pipeline-case.js';
import { formatTable } from '../lib/table.js';
import { compiledPath, transpileProject } from '../lib/transpile.js';
import { ROOT, WORK_DIR } from '../lib/workload.js';

const SHARDS = 4;
const KEY = 'bench-shards-key';
const CLI = compiledPath(path.join(ROOT, 'src/cli/main.ts'));
/** The emulator's filter job ready at once: the case measures the loading, which shards share out. */
const FAST_JOBS = { jobSchedulingMs: 200, jobRecordsPerMinute: 1e9 };

export interface ShardsBenchOptions {
  /** Records of the snapshot (default 100,000). */
  shardRecords?: number;
}

function pipelineText(records: number, out: string): string {
  return [
    'version: 1',
    'name: bench_shards',
    'service:',
    '  base_url: ${SLUICE_BASE_URL}',
    '  api_key: ${SLUICE_API_KEY}',
    '  retry: { retries: 8, base_delay_ms: 50, max_delay_ms: 500 }',
    'source:',
    '  type: snapshot',
    '  dataset_id: gd_l1vikfnt1wgvvqz95w',
    "  filter: { name: followers, operator: '>=', value: 0 }",
    `  records_limit: ${records}`,
    '  download: { format: jsonl, compress: true, batch_size: 10000 }',
    '  concurrency: 2',
    '  poll: { interval_ms: 100 }',
    `sink: { type: parquet, path: '${out}' }`,
    '',
  ].join('\n');
}

interface Exit {
  code: number | null;
  stderr: string;
}

function cli(args: string[], emu: EmulatorHandle, env: Record<string, string> = {}): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: KEY, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { seconds: (performance.now() - t0) / 1000, value };
}

interface Ip {
  max_in_window: number;
  total_429: number;
  blocked: boolean;
}

async function ipCounts(emu: EmulatorHandle): Promise<Ip | undefined> {
  const res = await fetch(`${emu.url}/_emulator/ip-block`);
  const view = (await res.json()) as { ips: Record<string, Ip> };
  return Object.values(view.ips)[0];
}

/** A workspace with the pipeline file: the output and the state directory (shared by the shards) beside it. */
async function workspace(records: number): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(path.join(WORK_DIR, 'out-shards-'));
  const file = path.join(dir, 'bench_shards.yaml');
  await writeFile(file, pipelineText(records, path.join(dir, 'out')));
  return { dir, file };
}

async function shardedRun(
  file: string,
  emu: EmulatorHandle,
): Promise<{ prepare: number; shards: number; exits: Exit[] }> {
  const prep = await timed(() => cli(['prepare', file, '--shards', String(SHARDS), '--quiet'], emu));
  if (prep.value.code !== 0) throw new Error(`prepare failed: ${prep.value.stderr.slice(-500)}`);
  const runs = await timed(() =>
    Promise.all(
      [...Array(SHARDS).keys()].map((i) => cli(['run', file, '--shard', `${i}/${SHARDS}`, '--no-progress'], emu)),
    ),
  );
  return { prepare: prep.seconds, shards: runs.seconds, exits: runs.value };
}

export async function runShardsBench(o: ShardsBenchOptions = {}): Promise<boolean> {
  const records = o.shardRecords ?? 100_000;
  await transpileProject();
  const open: EmulatorHandle[] = [];
  const dirs: string[] = [];
  try {
    const emu = await startEmulator({ apiKey: KEY, seed: 7, size: records, ...FAST_JOBS });
    open.push(emu);
    const one = await workspace(records);
    dirs.push(one.dir);
    const single = await timed(() => cli(['run', one.file, '--no-progress'], emu));
    if (single.value.code !== 0) throw new Error(`the one process failed: ${single.value.stderr.slice(-500)}`);
    const four = await workspace(records);
    dirs.push(four.dir);
    const sharded = await shardedRun(four.file, emu);
    sharded.exits.forEach((e, i) => {
      if (e.code !== 0) throw new Error(`shard ${i} failed: ${e.stderr.slice(-500)}`);
    });

    // Against an emulator refusing half of the downloads: together under the budget, never blocked.
    const faulty = await startEmulator({
      apiKey: KEY,
      seed: 7,
      size: records,
      ...FAST_JOBS,
      timeScale: 1,
      faults: { rules: [{ route: 'GET /datasets/snapshots/:id/download', rate: 0.5, faults: { '429': 1 } }] },
    });
    open.push(faulty);
    const refused = await workspace(records);
    dirs.push(refused.dir);
    const withFaults = await shardedRun(refused.file, faulty).catch((err: Error) => err);
    const ip = await ipCounts(faulty);

    const total = sharded.prepare + sharded.shards;
    console.log(
      formatTable([
        ['case', 's', 'vs one process', 'exits', '429s (max in 5 min)', 'IP blocked'],
        ['one process: sluice run', single.seconds.toFixed(1), '', '0', '', ''],
        [
          `prepare + ${SHARDS} shards at once`,
          `${total.toFixed(1)} (${sharded.prepare.toFixed(1)} + ${sharded.shards.toFixed(1)})`,
          `${(total / single.seconds).toFixed(2)}×`,
          sharded.exits.map((e) => e.code).join(' '),
          '',
          '',
        ],
        [
          `prepare + ${SHARDS} shards, half the downloads 429`,
          withFaults instanceof Error ? 'failed' : (withFaults.prepare + withFaults.shards).toFixed(1),
          '',
          withFaults instanceof Error ? withFaults.message.slice(0, 60) : withFaults.exits.map((e) => e.code).join(' '),
          ip ? `${ip.total_429} (${ip.max_in_window})` : '',
          ip ? String(ip.blocked) : '',
        ],
      ]),
    );
    console.log(
      `${records.toLocaleString('en')} records as parts of 10k into one Parquet output; ${os.cpus().length} cores ` +
        `(four CPU-bound shards take at best 1/${Math.min(SHARDS, os.cpus().length)} of one process's time here). ` +
        'Exit 1 under 429s is a shard stopping at the shared budget, named; target: at most 20 answers of 429 in any ' +
        'five minutes, never blocked.',
    );
    return ip !== undefined && ip.max_in_window <= 20 && !ip.blocked;
  } catch (err) {
    console.log(`shards: ${(err as Error).message}`);
    return false;
  } finally {
    await Promise.all(open.map((e) => e.close()));
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  if (!(await runShardsBench({ shardRecords: recordsArg() }))) process.exitCode = 1;
}
