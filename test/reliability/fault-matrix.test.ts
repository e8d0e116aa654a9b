/**
 * The fault matrix (bench/fault-matrix.ts): snapshot, SERP, reviews and deep lookup pipelines into DuckDB, Parquet,
 * JSONL and Postgres, under several fault seeds with faults on 10% of responses — and for Postgres, connections reset
 * by a proxy mid-COPY, mid-commit and before queries. Every cell must end — after at most three cron-style reruns —
 * with the clean run's output (rows, distinct keys, checksum) and every paid call made exactly once. The table is
 * printed; `npx tsx bench/fault-matrix.ts` prints the same and writes out/fault-matrix.md.
 */
import { describe, expect, it } from 'vitest';
import { FAULT_WEIGHTS, PG_FAULTS, formatMatrix, runFaultMatrix, type MatrixResult } from '../../bench/fault-matrix.js';

const FULL = process.env.SLUICE_FAULT_MATRIX === 'full';
/**
 * `npm test` runs the two seeds whose cells, between them, inject every fault kind (truncated gzip in both); CI
 * (`SLUICE_FAULT_MATRIX=full`) and `npx tsx bench/fault-matrix.ts` run all five. The assertion below that every kind
 * struck keeps the subset honest if the emulator's fault draw ever changes.
 */
const SEEDS = FULL ? [1, 2, 3, 4, 5] : [2, 4];
/**
 * Postgres cells in `npm test`: the one whose resets (drawn from its fault seed, by occurrence: see
 * test/support/tcp-proxy.ts) strike every kind — mid-COPY, mid-commit, before a query — within its first run's
 * units. CI runs them all.
 */
const POSTGRES_CELLS = FULL ? undefined : [{ seed: 4, pipeline: 'serp' }];

describe('fault matrix', () => {
  it('every pipeline × sink × seed ends with the clean output and pays once', { timeout: 240_000 }, async () => {
    const result: MatrixResult = await runFaultMatrix({
      seeds: SEEDS,
      maxReruns: 3,
      parallel: 3,
      cells: (c) =>
        c.sink !== 'postgres' || (POSTGRES_CELLS?.some((p) => p.seed === c.seed && p.pipeline === c.pipeline) ?? true),
    });
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
    expect([...Object.keys(FAULT_WEIGHTS), ...PG_FAULTS].filter((k) => !injected.has(k))).toEqual([]);
    // The sink-side resets struck the postgres cells, and only them.
    const pgCells = result.cells.filter((c) => c.sink === 'postgres');
    expect(pgCells.length).toBeGreaterThan(0);
    const pgFaults = new Set(pgCells.flatMap((c) => Object.keys(c.faults).filter((k) => PG_FAULTS.includes(k))));
    expect([...pgFaults].sort()).toEqual([...PG_FAULTS].sort());
    for (const c of result.cells.filter((x) => x.sink !== 'postgres'))
      expect(Object.keys(c.faults).filter((k) => PG_FAULTS.includes(k))).toEqual([]);
    expect(result.cells.reduce((n, c) => n + c.recovered, 0)).toBeGreaterThan(0);
  });
});
