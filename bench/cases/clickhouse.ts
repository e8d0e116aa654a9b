/**
 * The clickhouse sink's benchmark, part of `npm run bench` (or alone: `npx tsx bench/cases/clickhouse.ts [--records N]`):
 *
 *   sluice .jsonl.gz → clickhouse   the workload's parts (10k records each) through a pipeline — `file` source,
 *                                   `normalize: company_profile`, clickhouse sink (append) — in a child process of
 *                                   its own (its peak RSS is the case's);
 *   floor: clickhouse-client        the same rows, as the sink stored them, exported by the server as a JSONEachRow
 *                                   file (decompressed) and inserted again by the server's own client:
 *                                   `clickhouse-client --query "INSERT INTO floor FORMAT JSONEachRow" < file` into an
 *                                   empty copy of the table — what ClickHouse needs to take those rows in bulk.
 *
 * The floor loads the rows as stored rather than the raw records: 18.16's JSONEachRow cannot read a JSON object into
 * a String column (nested records are JSON text in the table), so the raw file does not load as it is. Both run
 * against one throwaway server (test/support/clickhouse-server.ts, Debian's 18.16) started for the benchmark, in the
 * same run; target: sluice within 1.0× the floor's wall time. Beside the wall times, CPU seconds: the sluice process's
 * and the server's (its threads' user + system time from /proc), against the floor's client and server — steadier
 * than wall time on a shared machine.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { NORMALIZE_COMPANY_PROFILES, partsPipelineCase, recordsArg } from '../lib/pipeline-case.js';
import { caseMain, isCaseChild, runCase, type CaseFn, type CaseResult } from '../lib/child.js';
import { formatTable } from '../lib/table.js';
import { WORK_DIR, prepareWorkload } from '../lib/workload.js';

interface Args {
  partsDir: string;
  outDir: string;
  concurrency: number;
  url: string;
}

const TARGET_RATIO = 1.0;
const DATABASE = 'bench';
const TABLE = 'company_profiles';

const CASES: Record<string, CaseFn<Args>> = {
  'sluice-clickhouse': (a) =>
    partsPipelineCase({
      name: 'bench_clickhouse',
      partsDir: a.partsDir,
      outDir: a.outDir,
      concurrency: a.concurrency,
      transforms: NORMALIZE_COMPANY_PROFILES,
      sink: { type: 'clickhouse', url: a.url, database: DATABASE, table: TABLE },
    }),
};

export interface ClickHouseBenchOptions {
  records: number;
  concurrency: number;
  nodeFlags?: string[];
}

/** Runs both cases and prints their table; false when a case failed to run. */
export async function runClickHouseBench(o: ClickHouseBenchOptions): Promise<boolean> {
  // Only the parent needs the server helper (the measured child runs compiled code of src/, sinks/ and bench/).
  const { startClickHouse } = await import('../../test/support/clickhouse-server.js');
  const { installCommand, systemBinary } = await import('../../test/support/system-packages.js');
  const client = systemBinary('clickhouse-client');
  if (systemBinary('clickhouse') === undefined || client === undefined) {
    console.log(
      `clickhouse: skipped, the server or its client is missing: ${installCommand(['clickhouse', 'clickhouse-client'])}`,
    );
    return true;
  }
  const w = await prepareWorkload(o.records, ['parts'], console.log);
  const server = await startClickHouse();
  const outDir = await mkdtemp(path.join(WORK_DIR, 'out-clickhouse-'));
  try {
    await server.createDatabase(DATABASE);
    const args: Args = { partsDir: w.partsDir, outDir, concurrency: o.concurrency, url: server.url() };
    const cpu = serverCpu(server.pid());
    const sluice = await runCase(import.meta.url, 'sluice-clickhouse', args, o.nodeFlags ?? []);
    const sluiceServerCpu = cpu.seconds();
    if (sluice.records !== w.records) throw new Error(`sluice-clickhouse counted ${sluice.records}, not ${w.records}`);

    // The rows as the sink stored them, as the server writes them, decompressed on disk (not timed).
    const file = path.join(server.dir, 'rows.jsonl');
    await clientRun(client, server.tcpPort, `SELECT * FROM ${DATABASE}.${TABLE} FORMAT JSONEachRow`, { out: file });
    await server.query(`CREATE TABLE ${DATABASE}.floor AS ${DATABASE}.${TABLE}`);
    const floorCpu = serverCpu(server.pid());
    const floor = await clientRun(client, server.tcpPort, `INSERT INTO ${DATABASE}.floor FORMAT JSONEachRow`, {
      in: file,
    });
    const floorServerCpu = floorCpu.seconds();
    const [loaded] = await server.rows<{ n: number }>(`SELECT count() AS n FROM ${DATABASE}.floor`);
    if (loaded?.n !== w.records) throw new Error(`the floor loaded ${loaded?.n} rows, not ${w.records}`);

    printTable(sluice, { ...floor, serverCpu: floorServerCpu }, sluiceServerCpu, w.records, w.jsonlBytes);
    return true;
  } catch (err) {
    console.log(`clickhouse: ${(err as Error).message}`);
    return false;
  } finally {
    server.stop();
    await rm(outDir, { recursive: true, force: true });
  }
}

/**
 * `clickhouse-client --query <sql>` reading `io.in` or writing `io.out`, timed: its wall seconds, and its CPU seconds
 * (bash's `times` after it: the user and system time of the shell's children, which is the client alone).
 */
function clientRun(
  client: string,
  port: number,
  sql: string,
  io: { in?: string; out?: string },
): Promise<{ seconds: number; clientCpu: number | undefined }> {
  const redirect = io.in !== undefined ? '< "$3"' : '> "$3"';
  const script = `"$0" --host 127.0.0.1 --port "$1" --query "$2" ${redirect} && times >&2`;
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script, client, String(port), sql, io.in ?? io.out ?? '/dev/null'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`clickhouse-client exited ${code}: ${err.trim().slice(-500)}`));
      // `times`: the shell's own user/system time, then its children's: `0m1.234s 0m0.123s`.
      const children = err.trim().split('\n').at(-1) ?? '';
      const parts = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      resolve({ seconds, clientCpu: parts.length === 2 ? parts[0]! + parts[1]! : undefined });
    });
  });
}

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`: 100 on Linux). */
const CLK_TCK = 100;

/** User + system seconds of the server process so far (all its threads). */
function serverCpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined; // no /proc (not Linux)
  }
}

/** Starts counting the server's CPU seconds; `seconds()` gives those spent since. */
function serverCpu(pid: number): { seconds: () => number | undefined } {
  const start = serverCpuSeconds(pid);
  return {
    seconds: () => {
      const end = serverCpuSeconds(pid);
      return start === undefined || end === undefined ? undefined : end - start;
    },
  };
}

function printTable(
  r: CaseResult,
  floor: { seconds: number; clientCpu: number | undefined; serverCpu: number | undefined },
  serverCpuS: number | undefined,
  records: number,
  jsonlBytes: number,
): void {
  // MB/s of the records as uncompressed JSONL, the unit of every MB/s figure of the benchmarks.
  const mbs = (seconds: number): string => (jsonlBytes / 1e6 / seconds).toFixed(1);
  const ratio = r.seconds / floor.seconds;
  const cpuS = (n: number | undefined): string => (n === undefined ? '' : n.toFixed(2));
  const total = serverCpuS === undefined ? undefined : r.cpuSeconds + serverCpuS;
  const floorTotal =
    floor.serverCpu === undefined || floor.clientCpu === undefined ? undefined : floor.serverCpu + floor.clientCpu;
  const cpuRatio = total === undefined || floorTotal === undefined ? undefined : total / floorTotal;
  console.log(
    formatTable([
      ['case', 's', 'CPU s', 'server CPU s', 'rec/s', 'MB/s', 'peak RSS', '× floor', 'CPU × floor', 'target', ''],
      [
        'floor: clickhouse-client INSERT … JSONEachRow',
        floor.seconds.toFixed(2),
        cpuS(floor.clientCpu),
        cpuS(floor.serverCpu),
        Math.round(records / floor.seconds).toLocaleString('en'),
        mbs(floor.seconds),
        '',
        '',
        '',
        '',
        '',
      ],
      [
        'sluice .jsonl.gz → normalize → clickhouse',
        r.seconds.toFixed(2),
        r.cpuSeconds.toFixed(2),
        cpuS(serverCpuS),
        Math.round(r.records / r.seconds).toLocaleString('en'),
        mbs(r.seconds),
        `${r.peakRssMb.toFixed(0)} MB`,
        `${ratio.toFixed(2)}×`,
        cpuRatio === undefined ? '' : `${cpuRatio.toFixed(2)}×`,
        `≤ ${TARGET_RATIO.toFixed(1)}×`,
        ratio <= TARGET_RATIO ? 'ok' : 'MISSED',
      ],
    ]),
  );
  console.log(
    'floor: the server’s own client inserting the same rows from a decompressed JSONEachRow file (no sluice, no ' +
      'network beyond loopback); sluice: gunzip, decode, normalize, encode TabSeparated and insert, each unit staged ' +
      'and attached. CPU s: the sluice process’s, and the floor client’s; server CPU s the server’s in the same phase; ' +
      'CPU × floor: (CPU s + server CPU s) of sluice against the floor’s, steadier than wall time on a shared machine.',
  );
}

if (isCaseChild(import.meta.url)) await caseMain(CASES);
else if (process.argv[1] === new URL(import.meta.url).pathname) {
  const records = recordsArg();
  if (!(await runClickHouseBench({ records, concurrency: 2 }))) process.exitCode = 1;
}
