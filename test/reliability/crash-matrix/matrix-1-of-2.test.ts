/**
 * Crash matrix, half 1 of 2 (run-cells.ts HALVES): `sluice run` killed with SIGKILL at a failpoint or from outside,
 * then run again. In `npm test` the cells a sink's commit path does not decide — the paid filter job killed on both
 * sides of its checkpoint, a SERP crawl killed as it discovers a page and from outside (the sink conformance suite,
 * test/sinks/conformance/, kills every sink in its commit path); with SLUICE_CRASH_MATRIX=full every cell of
 * bench/crash-matrix.ts. Right after the kill a reader sees nothing partial or duplicated; one rerun gives the clean
 * run's output, the filter job paid once, no leftovers.
 */
import { describe, expect, it } from 'vitest';
import { GROUP_TIMEOUT_MS, HALVES, runCellsExpectingPass } from './run-cells.js';

describe('crash matrix, half 1 of 2', () => {
  it(
    'every kill -9 leaves nothing partial visible, and one rerun gives the clean output, paid once',
    { timeout: GROUP_TIMEOUT_MS },
    async () => {
      const { cells } = await runCellsExpectingPass(HALVES[0]);
      // A filter job the killed run started but had not checkpointed is found by its rerun, not paid again.
      const unrecorded = cells.filter((c) => 'failpoint' in c.kill && c.kill.failpoint === 'snapshot:job-started');
      for (const c of unrecorded) expect(c.recoveredJob, c.label).toBe(true);
    },
  );
});
