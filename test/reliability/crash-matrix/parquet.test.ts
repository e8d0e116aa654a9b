/**
 * Crash matrix, snapshot → Parquet: `sluice run` killed with SIGKILL mid-download (at a failpoint and from outside),
 * once a unit is staged, and between the renames of one publish's files. Right after the kill a reader sees only
 * whole, committed files (committed files not yet in place are counted, not called a problem); one rerun gives the
 * clean run's output, with the filter job paid once and no leftovers. `npx tsx bench/crash-matrix.ts` runs the full
 * matrix.
 */
import { describe, expect, it } from 'vitest';
import { GROUPS, GROUP_TIMEOUT_MS, runCellsExpectingPass } from './run-cells.js';

describe('crash matrix: snapshot into Parquet', () => {
  it(
    'every kill -9 leaves nothing partial visible, and one rerun gives the clean output, paid once',
    { timeout: GROUP_TIMEOUT_MS },
    async () => {
      const { cells } = await runCellsExpectingPass(GROUPS.parquet);

      // A kill between the renames of a publish (a cell of the full matrix) came after units were published and
      // before the last one: the reader saw part of the output.
      const betweenRenames = cells.filter(
        (c) => 'failpoint' in c.kill && c.kill.failpoint.startsWith('files:after-rename'),
      );
      if (betweenRenames.length > 0)
        expect(betweenRenames.some((c) => (c.visibleRows ?? 0) > 0 && (c.visibleRows ?? 0) < c.clean.rows)).toBe(true);
    },
  );
});
