/**
 * Crash matrix, snapshot → DuckDB (append and merge): `sluice run` killed with SIGKILL at the paid filter job's
 * checkpoints, the state file's rename, a unit's data before its checkpoint, after a commit, and from outside
 * mid-download. Right after the kill a reader sees nothing partial or duplicated; one rerun gives the clean run's
 * output, with the filter job paid once and no leftovers. `npx tsx bench/crash-matrix.ts` runs the full matrix.
 */
import { describe, expect, it } from 'vitest';
import { GROUPS, GROUP_TIMEOUT_MS, runCellsExpectingPass } from './run-cells.js';

describe('crash matrix: snapshot into DuckDB', () => {
  it(
    'every kill -9 leaves nothing partial visible, and one rerun gives the clean output, paid once',
    { timeout: GROUP_TIMEOUT_MS },
    async () => {
      const { cells } = await runCellsExpectingPass(GROUPS.duckdb);

      // The cells did what they claim: units were committed before some kills and not before others, and a job
      // started by the killed run was found by its rerun rather than paid again.
      const partial = cells.filter((c) => (c.visibleRows ?? 0) > 0);
      expect(partial.some((c) => (c.visibleRows ?? 0) < c.clean.rows)).toBe(true);
      expect(cells.some((c) => c.visibleRows === undefined || c.visibleRows === 0)).toBe(true);
      expect(cells.some((c) => c.recoveredJob)).toBe(true);
    },
  );
});
