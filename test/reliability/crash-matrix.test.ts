/**
 * The crash matrix (bench/crash-matrix.ts): `sluice run` killed with SIGKILL at every failpoint of the commit paths
 * and from outside mid-download — snapshot into DuckDB (append, merge, replace), Parquet and JSONL (append,
 * replace), and a SERP crawl into DuckDB. Every cell must die where planned, show a reader nothing partial or
 * duplicated right after the kill, and after one rerun of the same command end with the clean run's output, the paid
 * filter job started once and no crash leftovers. The table is printed; `npx tsx bench/crash-matrix.ts` prints the
 * same and writes out/crash-matrix.md.
 */
import { describe, expect, it } from 'vitest';
import { CELLS, cellPassed, formatMatrix, runCrashMatrix } from '../../bench/crash-matrix.js';
import { FAILPOINTS } from '../../src/core/failpoints.js';

describe('crash matrix', () => {
  it(
    'every kill -9 leaves nothing partial visible, and one rerun gives the clean output, paid once',
    { timeout: 300_000 },
    async () => {
      const result = await runCrashMatrix();
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

      // The matrix did what it claims: every failpoint was struck somewhere, units were committed before some kills
      // and not before others, and a job started by the killed run was found by its rerun rather than paid again.
      const struck = new Set(
        result.cells.flatMap((c) => ('failpoint' in c.kill ? [c.kill.failpoint.split('=')[0]] : [])),
      );
      expect(Object.keys(FAILPOINTS).filter((f) => !struck.has(f))).toEqual([]);
      expect(result.cells.filter((c) => 'external' in c.kill).length).toBeGreaterThanOrEqual(4);
      const partial = result.cells.filter((c) => !c.sink.endsWith('_replace') && (c.visibleRows ?? 0) > 0);
      expect(partial.some((c) => (c.visibleRows ?? 0) < c.clean.rows)).toBe(true);
      expect(result.cells.some((c) => c.visibleRows === undefined || c.visibleRows === 0)).toBe(true);
      expect(result.cells.some((c) => c.recoveredJob)).toBe(true);
      expect(result.cells).toHaveLength(CELLS.length);
    },
  );
});
