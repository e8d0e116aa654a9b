/**
 * The fault matrix (bench/fault-matrix.ts): snapshot, SERP, reviews and deep lookup pipelines into DuckDB, Parquet
 * and JSONL, under several fault seeds with faults on 10% of responses. Every cell must end — after at most three
 * cron-style reruns — with the clean run's output (rows, distinct keys, checksum) and every paid call made exactly
 * once. The table is printed; `npx tsx bench/fault-matrix.ts` prints the same and writes out/fault-matrix.md.
 */
import { describe, expect, it } from 'vitest';
import { FAULT_WEIGHTS, formatMatrix, runFaultMatrix, type MatrixResult } from '../../bench/fault-matrix.js';

/**
 * `npm test` runs the two seeds whose cells, between them, inject every fault kind (truncated gzip in both); CI
 * (`SLUICE_FAULT_MATRIX=full`) and `npx tsx bench/fault-matrix.ts` run all five. The assertion below that every kind
 * struck keeps the subset honest if the emulator's fault draw ever changes.
 */
const SEEDS = process.env.SLUICE_FAULT_MATRIX === 'full' ? [1, 2, 3, 4, 5] : [3, 4];

describe('fault matrix', () => {
  it('every pipeline × sink × seed ends with the clean output and pays once', { timeout: 240_000 }, async () => {
    const result: MatrixResult = await runFaultMatrix({ seeds: SEEDS, maxReruns: 3, parallel: 3 });
    console.log(formatMatrix(result));

    const bad = result.cells
      .filter((c) => !c.succeeded || !c.equal || !c.paidOnce)
      .map(
        (c) =>
          `seed ${c.seed} ${c.pipeline} → ${c.sink}: ${c.succeeded ? '' : 'never succeeded; '}` +
          `output ${JSON.stringify(c.digest)} vs clean ${JSON.stringify(c.clean)}, paid ${JSON.stringify(c.paid)}; ` +
          c.failures.join(' / '),
      );
    expect(bad).toEqual([]);

    // The clean runs themselves hold each record once.
    for (const c of result.cells) {
      expect(c.clean.rows).toBeGreaterThan(0);
      expect(c.clean.keys).toBe(c.clean.rows);
    }
    // The matrix did what it claims: every kind of fault struck somewhere, and lost answers of paid calls were
    // recovered rather than paid for again.
    const injected = new Set(result.cells.flatMap((c) => Object.keys(c.faults)));
    expect([...Object.keys(FAULT_WEIGHTS)].filter((k) => !injected.has(k))).toEqual([]);
    expect(result.cells.reduce((n, c) => n + c.recovered, 0)).toBeGreaterThan(0);
  });
});
