/**
 * Crash matrix, `write: replace` of DuckDB, Parquet and JSONL over an earlier complete run, and a SERP crawl into
 * DuckDB: `sluice run` killed with SIGKILL at the swap (before, in and after it), after the swap but before the run
 * is marked complete, once a crawl page's successor is checkpointed, and from outside mid-crawl. Right after the kill
 * a replace output is exactly one complete generation and the crawl's table holds only committed pages; one rerun
 * gives the clean run's output with no leftovers. `npx tsx bench/crash-matrix.ts` runs the full matrix.
 */
import { describe, it } from 'vitest';
import { GROUPS, GROUP_TIMEOUT_MS, runCellsExpectingPass } from './run-cells.js';

describe('crash matrix: replace, and a crawl', () => {
  it(
    'every kill -9 leaves nothing partial visible, and one rerun gives the clean output, paid once',
    { timeout: GROUP_TIMEOUT_MS },
    async () => {
      await runCellsExpectingPass(GROUPS.replaceAndCrawl);
    },
  );
});
