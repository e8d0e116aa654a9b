/**
 * The fault matrix: every pipeline kind × every sink × several fault seeds, against an emulator that injects faults
 * into 10% of its responses (429 with and without Retry-After, 500/502/503, resets before, after and in the middle
 * of answers, truncated gzip, JSON answers that end early, slow bodies, and crawl pages through a zone the service
 * throttles: 200s whose x-brd-status-code says 429), with its real-service defaults otherwise
 * (the IP block after 25 answers of 429, review pages that repeat, enrichments without a status). A cell's run may fail; it is then rerun, as cron would, until it succeeds
 * or runs out of reruns. The cell passes when its final output equals a clean run's (rows, distinct keys, and a
 * checksum over the rows DuckDB — or for Postgres, the server — reads back from the output) and every paid call was
 * made exactly once.
 *
 * The postgres sink's cells also have faults on the sink's side: the sink reaches one throwaway cluster (a database
 * per cell) through a loopback TCP proxy (test/support/tcp-proxy.ts) that resets connections drawn by the cell's
 * fault seed — mid-COPY, after the server committed but before the client heard (the unit "maybe committed"), and
 * before a query reached the server — reported as the `pg_reset_*` fault kinds.
 *
 *   npx tsx bench/fault-matrix.ts [--seeds 1,2,3,4,5] [--rate 0.1] [--out out/fault-matrix.md] [--keep]
 *
 * prints the table and writes it as Markdown. test/reliability/fault-matrix.test.ts runs the same matrix and
 * asserts it.
 *
 * Each cell has an emulator of its own (same data seed, its own fault seed), so its paid-call counters and its
 * snapshot list hold only that cell's work, and the pipeline runs in-process (`runPipeline`) against it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatMatrix } from './lib/fault-report.js';
import { runFaultMatrix } from './lib/fault-runner.js';
import { cliArg } from './lib/matrix-common.js';

// The matrix lives in bench/lib/fault-*.ts; this module is what the tests and the command line import and run.
export type { Digest } from './lib/matrix-common.js';
export {
  FAULT_WEIGHTS,
  PAID_FAULT_RATE,
  PG_FAULTS,
  PG_RESET_RATES,
  PIPELINES,
  SINKS,
  faultSeed,
  type CellResult,
  type MatrixOptions,
  type MatrixResult,
  type PipelineKind,
  type SinkKind,
} from './lib/fault-cells.js';
export { formatMatrix } from './lib/fault-report.js';
export { runFaultMatrix } from './lib/fault-runner.js';

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const seeds = cliArg('seeds')
    ?.split(',')
    .map((s) => Number(s));
  const out = cliArg('out') ?? 'out/fault-matrix.md';
  const rate = cliArg('rate');
  const result = await runFaultMatrix({
    ...(seeds && { seeds }),
    ...(rate !== undefined && { rate: Number(rate) }),
    keep: process.argv.includes('--keep'),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  const table = formatMatrix(result);
  process.stdout.write(table);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(out, table);
  process.stderr.write(`written to ${out}\n`);
  if (!result.cells.every((c) => c.equal && c.paidOnce)) process.exitCode = 1;
}
