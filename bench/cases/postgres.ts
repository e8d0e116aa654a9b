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
 * within 1.5× the floor's wall time.
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
  url: string;
}

const TARGET_RATIO = 1.5;
const TABLE = 'company_profiles';

const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (m) => process.stderr.write(`${m}\n`),
};

const CASES: Record<string, CaseFn<Args>> = {
  'sluice-postgres': async (a) => {
    const { loadPipeline } = await import('../../src/pipeline/load.js');
    const { runPipeline } = await import('../../src/engine/run.js');
    const file = path.join(a.outDir, 'bench.yaml');
    const config = {
      version: 1,
      name: 'bench_postgres',
      service: { base_url: 'emulator', api_key: 'bench' },
      source: { type: 'file', paths: [a.partsDir], format: 'jsonl', concurrency: a.concurrency },
      transforms: [{ type: 'normalize', preset: 'company_profile' }],
      sink: { type: 'postgres', url: a.url, table: TABLE },
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
  },
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
    const sluice = await runCase(import.meta.url, 'sluice-postgres', args, o.nodeFlags ?? []);
    if (sluice.records !== w.records) throw new Error(`sluice-postgres counted ${sluice.records}, not ${w.records}`);

    // The server writes and reads the file itself: it lives in the cluster's directory, which the server owns.
    const copyFile = path.join(server.socketDir, 'rows.copy');
    await server.query('bench', `COPY ${TABLE} TO '${copyFile}'`);
    await server.query('bench', `CREATE TABLE floor (LIKE ${TABLE})`);
    const t0 = performance.now();
    const [loaded] = await server
      .query<{ n: string }>('bench', `COPY floor FROM '${copyFile}'`)
      .then(async () => server.query<{ n: string }>('bench', 'SELECT count(*) AS n FROM floor'));
    const floorSeconds = (performance.now() - t0) / 1000;
    if (Number(loaded?.n) !== w.records) throw new Error(`the floor loaded ${loaded?.n} rows, not ${w.records}`);

    printTable(sluice, floorSeconds, w.records);
    return true;
  } catch (err) {
    console.log(`postgres: ${(err as Error).message}`);
    return false;
  } finally {
    server.stop();
    await rm(outDir, { recursive: true, force: true });
  }
}

function printTable(r: CaseResult, floorSeconds: number, records: number): void {
  const ratio = r.seconds / floorSeconds;
  console.log(
    formatTable([
      ['case', 's', 'CPU s', 'rec/s', 'peak RSS', '× floor', 'target', ''],
      [
        'floor: Postgres COPY FROM file',
        floorSeconds.toFixed(2),
        '',
        Math.round(records / floorSeconds).toLocaleString('en'),
        '',
        '',
        '',
        '',
      ],
      [
        'sluice .jsonl.gz → normalize → postgres',
        r.seconds.toFixed(2),
        r.cpuSeconds.toFixed(2),
        Math.round(r.records / r.seconds).toLocaleString('en'),
        `${r.peakRssMb.toFixed(0)} MB`,
        `${ratio.toFixed(2)}×`,
        `≤ ${TARGET_RATIO.toFixed(1)}×`,
        ratio <= TARGET_RATIO ? 'ok' : 'MISSED',
      ],
    ]),
  );
  console.log(
    'floor: the server alone loading the same rows from a file (no client, no JSON); sluice: decode, normalize, ' +
      'encode and COPY, units in their own transactions. CPU s and peak RSS are the sluice process’s (the server’s ' +
      'work is not in them).',
  );
}

if (isCaseChild(import.meta.url)) await caseMain(CASES);
else if (process.argv[1] === new URL(import.meta.url).pathname) {
  const i = process.argv.indexOf('--records');
  const records = i > 0 ? Number(process.argv[i + 1]) : 200_000;
  if (!(await runPostgresBench({ records, concurrency: 2 }))) process.exitCode = 1;
}
