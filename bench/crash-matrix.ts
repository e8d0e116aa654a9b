/**
 * The crash matrix: `sluice run` killed with SIGKILL at every failpoint of the commit paths (src/core/failpoints.ts)
 * and from outside at a random moment mid-download, for a snapshot pipeline (four parts, two at a time) into each
 * sink — DuckDB append and merge, Parquet, JSONL, and `write: replace` of each kind — and a SERP crawl into DuckDB.
 * For each cell:
 *
 *  1. the run is spawned (the real CLI, in a child process) and must die by SIGKILL at the failpoint;
 *  2. right after the kill, what a reader sees must be whole: every file a glob lists reads completely, no record
 *     is visible twice, no more rows than a clean run's (`replace`: exactly the live generation, a complete run's);
 *     in DuckDB, the table holds exactly the rows its committed checkpoints account for;
 *  3. the same command is run again (no failpoint) until it succeeds — once must do — and the output must equal a
 *     clean run's (row count, distinct keys, a checksum DuckDB computes over every row, leaving out columns that
 *     differ between correct runs such as fetch times), with the paid filter job started exactly once over the
 *     crashed run and its rerun, and no crash leftovers (temp, staging, marker, generation or state temp files).
 *
 *   npx tsx bench/crash-matrix.ts [--parallel 3] [--only <part of a cell label>] [--quick] [--out out/crash-matrix.md]
 *                                [--keep]
 *
 * prints the table and writes it as Markdown (not with --only or --quick). test/reliability/crash-matrix/ runs the
 * cells of TEST_CELLS (--quick), or all of them with SLUICE_CRASH_MATRIX=full, and asserts them.
 *
 * Each cell has an emulator of its own in this process (same data seed), so its paid-call counters hold only that
 * cell's work; the children reach it over 127.0.0.1.
 *
 * Only the run that is killed needs a process of its own. The reruns, and the earlier run of a `replace` cell whose
 * output is not a DuckDB file, run the CLI's own entry (runCli) in this process: a child's start and DuckDB load
 * cost more than many a cell's checks. An earlier run into DuckDB stays a child: the DuckDB sink keeps the file open
 * in DuckDB's cache of the process that wrote it (sinks/duckdb/database.ts), where the killed run must open it next.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { CELLS, TEST_CELLS, cellLabel, cellPassed } from './lib/crash-cells.js';
import { formatMatrix } from './lib/crash-report.js';
import { runCrashMatrix } from './lib/crash-runner.js';
import { cliArg } from './lib/matrix-common.js';

// The matrix lives in bench/lib/crash-*.ts; this module is what the tests and the command line import and run.
export type { Digest, PipelineKind, SinkKind } from './lib/crash-outputs.js';
export {
  CELLS,
  TEST_CELLS,
  cellLabel,
  cellPassed,
  type CellResult,
  type CellSpec,
  type FailpointSpec,
  type Kill,
  type MatrixOptions,
  type MatrixResult,
} from './lib/crash-cells.js';
export { formatMatrix } from './lib/crash-report.js';
export { DEFAULT_PARALLEL, runCrashMatrix } from './lib/crash-runner.js';

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const only = cliArg('only');
  const quick = process.argv.includes('--quick');
  const out = cliArg('out') ?? 'out/crash-matrix.md';
  const parallel = cliArg('parallel');
  const base = quick ? TEST_CELLS : CELLS;
  const result = await runCrashMatrix({
    cells: only === undefined ? base : base.filter((c) => cellLabel(c).includes(only)),
    ...(parallel !== undefined && { parallel: Number(parallel) }),
    keep: process.argv.includes('--keep'),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  const table = formatMatrix(result);
  process.stdout.write(table);
  const cpu = process.cpuUsage();
  process.stderr.write(
    `this process (emulators, clean runs, checks): ${((cpu.user + cpu.system) / 1e6).toFixed(1)} CPU-s\n`,
  );
  if (only === undefined && !quick) {
    mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    writeFileSync(out, table);
    process.stderr.write(`written to ${out}\n`);
  }
  if (!result.cells.every(cellPassed)) process.exitCode = 1;
}
