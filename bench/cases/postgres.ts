/**
 * The postgres sink's benchmark, part of `npm run bench` (or alone: `npx tsx bench/cases/postgres.ts [--records N]`):
 *
 *   sluice .jsonl.gz → postgres   the workload's parts (10k records each) through a pipeline — `file` source,
 *                                 `normalize: company_profile`, postgres sink (append) — in a child process of its
 *                                 own (its peak RSS is the case's);
 *   floor: Postgres COPY          the same rows, as the sink stored them, exported with `COPY … TO` into a file and
 *                                 loaded again by the server's own `COPY … FROM '<file>'` into an empty copy of the
 *                                 table: what the server needs to store those rows, with no client at all.
 *
 * Both run against one throwaway cluster (test/support/postgres-server.ts) started for the benchmark; target: sluice
 * within 1.0× the floor's wall time (its client's work on the other core, beside the server's). Beside the wall
 * times, the server's CPU seconds in each phase (its processes' user + system time from /proc, the backends that
 * exited included): on a shared machine the wall times swing with the load, while CPU seconds — the sluice
 * process's plus the server's, against the server's alone — do not.
 */
import { readFileSync, readdirSync } from 'node:fs';
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
const TABLE = 'company_profiles';

const CASES: Record<string, CaseFn<Args>> = {
  'sluice-postgres': (a) =>
    partsPipelineCase({
      name: 'bench_postgres',
      partsDir: a.partsDir,
      outDir: a.outDir,
      concurrency: a.concurrency,
      transforms: NORMALIZE_COMPANY_PROFILES,
      sink: { type: 'postgres', url: a.url, table: TABLE },
    }),
};

export interface PostgresBenchOptions {
  records: number;
  concurrency: number;
  nodeFlags?: string[];
}

/** Runs both cases and prints their table; false when a case failed to run. */
export async function runPostgresBench(o: PostgresBenchOptions): Promise<boolean> {
  const w = await prepareWorkload(o.records, ['parts'], console.log);
  // Only the parent needs the server helper (the measured child runs compiled code of src/, sinks/ and bench/).
  const { startPostgres } = await import('../../test/support/postgres-server.js');
  const server = await startPostgres();
  const outDir = await mkdtemp(path.join(WORK_DIR, 'out-postgres-'));
  try {
    await server.createDatabase('bench');
    const args: Args = { partsDir: w.partsDir, outDir, concurrency: o.concurrency, url: server.url('bench') };
    const cpu = serverCpu(server.socketDir);
    const sluice = await runCase(import.meta.url, 'sluice-postgres', args, o.nodeFlags ?? []);
    const sluiceServerCpu = cpu.seconds();
    if (sluice.records !== w.records) throw new Error(`sluice-postgres counted ${sluice.records}, not ${w.records}`);

    // The server writes and reads the file itself: it lives in the cluster's directory, which the server owns.
    const copyFile = path.join(server.socketDir, 'rows.copy');
    await server.query('bench', `COPY ${TABLE} TO '${copyFile}'`);
    await server.query('bench', `CREATE TABLE floor (LIKE ${TABLE})`);
    const floorCpu = serverCpu(server.socketDir);
    const t0 = performance.now();
    const [loaded] = await server
      .query<{ n: string }>('bench', `COPY floor FROM '${copyFile}'`)
      .then(async () => server.query<{ n: string }>('bench', 'SELECT count(*) AS n FROM floor'));
    const floorSeconds = (performance.now() - t0) / 1000;
    const floorServerCpu = floorCpu.seconds();
    if (Number(loaded?.n) !== w.records) throw new Error(`the floor loaded ${loaded?.n} rows, not ${w.records}`);

    printTable(sluice, { seconds: floorSeconds, serverCpu: floorServerCpu }, sluiceServerCpu, w.records, w.jsonlBytes);
    return true;
  } catch (err) {
    console.log(`postgres: ${(err as Error).message}`);
    return false;
  } finally {
    server.stop();
    await rm(outDir, { recursive: true, force: true });
  }
}

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`: 100 on Linux). */
const CLK_TCK = 100;

/** User + system seconds of the server so far: the postmaster, its exited children, its live ones. */
function serverCpuSeconds(postmaster: number): number | undefined {
  try {
    // Fields after the command's closing parenthesis: state is field 3, ppid 4, utime 14 … cstime 17.
    const fields = (pid: number | string): string[] =>
      readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
    const own = fields(postmaster);
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const f = fields(pid);
        if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // The process ended meanwhile: its time is in the postmaster's children's now.
      }
    }
    return ticks / CLK_TCK;
  } catch {
    return undefined; // no /proc (not Linux)
  }
}

/** Starts counting the server's CPU seconds; `seconds()` gives those spent since. */
function serverCpu(clusterDir: string): { seconds: () => number | undefined } {
  let postmaster: number | undefined;
  try {
    postmaster = Number(readFileSync(path.join(clusterDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    postmaster = undefined;
  }
  const start = postmaster === undefined ? undefined : serverCpuSeconds(postmaster);
  return {
    seconds: () => {
      const end = postmaster === undefined ? undefined : serverCpuSeconds(postmaster);
      return start === undefined || end === undefined ? undefined : end - start;
    },
  };
}

function printTable(
  r: CaseResult,
  floor: { seconds: number; serverCpu: number | undefined },
  serverCpuS: number | undefined,
  records: number,
  jsonlBytes: number,
): void {
  // MB/s of the records as uncompressed JSONL, the unit of every MB/s figure of the benchmarks.
  const mbs = (seconds: number): string => (jsonlBytes / 1e6 / seconds).toFixed(1);
  const ratio = r.seconds / floor.seconds;
  const cpuS = (n: number | undefined): string => (n === undefined ? '' : n.toFixed(2));
  const total = serverCpuS === undefined ? undefined : r.cpuSeconds + serverCpuS;
  const cpuRatio = total === undefined || floor.serverCpu === undefined ? undefined : total / floor.serverCpu;
  console.log(
    formatTable([
      ['case', 's', 'CPU s', 'server CPU s', 'rec/s', 'MB/s', 'peak RSS', '× floor', 'CPU × floor', 'target', ''],
      [
        'floor: Postgres COPY FROM file',
        floor.seconds.toFixed(2),
        '',
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
        'sluice .jsonl.gz → normalize → postgres',
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
    'floor: the server alone loading the same rows from a file (no client, no JSON); sluice: decode, normalize, ' +
      'encode and COPY, units in their own transactions. CPU s and peak RSS are the sluice process’s; server CPU s ' +
      'the server’s in the same phase; CPU × floor: (CPU s + server CPU s) of sluice against the floor’s server ' +
      'CPU s, steadier than wall time on a shared machine.',
  );
}

if (isCaseChild(import.meta.url)) await caseMain(CASES);
else if (process.argv[1] === new URL(import.meta.url).pathname) {
  const records = recordsArg();
  if (!(await runPostgresBench({ records, concurrency: 2 }))) process.exitCode = 1;
}
