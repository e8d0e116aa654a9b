/**
 * The crash matrix's cells as `npm test` runs them (TEST_CELLS of bench/crash-matrix.ts; the full matrix with
 * SLUICE_CRASH_MATRIX=full), in two halves, one test file each, so that vitest's two workers share them: each half
 * runs its cells and fails on any cell that did not pass.
 *
 * A cell passes only if the run died by SIGKILL at its own failpoint (its stderr names it), so "every failpoint was
 * struck" follows from checks.test.ts (the full matrix and the sink conformance suite's targets name every
 * failpoint, and the halves hold every cell) and every half passing.
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

/**
 * The cells the test files run: TEST_CELLS, or with SLUICE_CRASH_MATRIX=full (for CI) every cell of the full matrix,
 * asserted the same way.
 */
export const MATRIX: CellSpec[] = process.env.SLUICE_CRASH_MATRIX === 'full' ? CELLS : TEST_CELLS;

/** Every other cell, in matrix order: each half has cells of every group of the full matrix. */
export const HALVES: [CellSpec[], CellSpec[]] = [
  MATRIX.filter((_, i) => i % 2 === 0),
  MATRIX.filter((_, i) => i % 2 === 1),
];

/** A half's cells at once: two, since the other vitest worker shares the two cores. */
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

/** How long a half may take: several `sluice run`s per cell, on two cores that other test files share. */
export const GROUP_TIMEOUT_MS = 600_000;
