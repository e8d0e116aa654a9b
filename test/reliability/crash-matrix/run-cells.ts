/**
 * The crash matrix's cells as `npm test` runs them (TEST_CELLS of bench/crash-matrix.ts; the full matrix with
 * SLUICE_CRASH_MATRIX=full), in four groups, one test file each, so that vitest's two workers share them: each group
 * runs its cells and fails on any cell that did not pass.
 *
 * A cell passes only if the run died by SIGKILL at its own failpoint (its stderr names it), so "every failpoint was
 * struck" follows from checks.test.ts (TEST_CELLS names every failpoint, and the groups hold every cell) and every
 * group passing.
 */
import { expect } from 'vitest';
import {
  CELLS,
  TEST_CELLS,
  cellPassed,
  formatMatrix,
  runCrashMatrix,
  type CellSpec,
  type MatrixResult,
} from '../../../bench/crash-matrix.js';
import { isReplace } from '../../../bench/lib/crash-outputs.js';

/**
 * The cells the test files run: TEST_CELLS, or with SLUICE_CRASH_MATRIX=full (for CI) every cell of the full matrix,
 * asserted the same way.
 */
export const MATRIX: CellSpec[] = process.env.SLUICE_CRASH_MATRIX === 'full' ? CELLS : TEST_CELLS;

export const GROUPS = {
  /** Snapshot into DuckDB append and merge: the paid job's checkpoints, the state file, the engine's commit. */
  duckdb: MATRIX.filter((c) => c.pipeline === 'snapshot' && (c.sink === 'duckdb' || c.sink === 'duckdb_merge')),
  /** Snapshot into Parquet: mid-download, staging, and between the renames of a publish's files. */
  parquet: MATRIX.filter((c) => c.sink === 'parquet'),
  /** Snapshot into JSONL: before and after the manifest records a file commit, and from outside. */
  jsonl: MATRIX.filter((c) => c.sink === 'jsonl'),
  /** `write: replace` of each sink, over an earlier complete run, and a SERP crawl into DuckDB. */
  replaceAndCrawl: MATRIX.filter((c) => isReplace(c.sink) || c.pipeline === 'serp'),
} satisfies Record<string, CellSpec[]>;

/** A group's cells at once: two, since the other vitest worker shares the two cores. */
const PARALLEL = 2;

/** Runs `cells`, prints their table, and expects every one of them to have passed. */
export async function runCellsExpectingPass(cells: CellSpec[]): Promise<MatrixResult> {
  const result = await runCrashMatrix({ cells, parallel: PARALLEL });
  console.log(formatMatrix(result));
  const bad = result.cells
    .filter((c) => !cellPassed(c))
    .map(
      (c) =>
        `${c.label}: died ${c.died ? 'yes' : `no (${c.endedAs})`}; after the kill ${JSON.stringify(c.visibleProblems)}; ` +
        `${c.reruns} rerun(s), ${c.rerunSucceeded ? '' : 'none succeeded, '}output ${JSON.stringify(c.digest)} vs ` +
        `clean ${JSON.stringify(c.clean)}; paid ${JSON.stringify(c.paid)}; leftovers ${JSON.stringify(c.leftovers)}; ` +
        c.failures.join(' / '),
    );
  expect(bad).toEqual([]);
  expect(result.cells).toHaveLength(cells.length);
  return result;
}

/** How long a group may take: several `sluice run`s per cell, on two cores that other test files share. */
export const GROUP_TIMEOUT_MS = 600_000;
