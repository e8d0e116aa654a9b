/**
 * What the fault matrix (bench/fault-matrix.ts) is made of: its pipeline and sink kinds, the faults the emulator and
 * the Postgres proxy inject in each cell, what a cell must pay and how its output is keyed, and what a cell records.
 */
import type { FaultConfig } from '../../src/emulator/server.js';
import { CUT_MOMENTS, type CutMoment } from '../../test/support/tcp-proxy.js';
import type { Digest } from './matrix-common.js';

export const PIPELINES = ['snapshot', 'serp', 'reviews', 'deep_lookup'] as const;
export const SINKS = ['duckdb', 'parquet', 'jsonl', 'postgres'] as const;
export type PipelineKind = (typeof PIPELINES)[number];
export type SinkKind = (typeof SINKS)[number];

/**
 * Every kind the emulator can inject, equally likely (latency is not a fault: slow_body covers slowness), and a zone
 * the service throttles (`sr_rate_limit`: 200s with x-brd-status-code 429 for `throttle_s`; on crawl pages only).
 */
export const FAULT_WEIGHTS = {
  '429': 1,
  '429_retry_after': 1,
  '500': 1,
  '502': 1,
  '503': 1,
  reset_before: 1,
  reset: 1,
  reset_after: 1,
  truncated_gzip: 1,
  truncated_json: 1,
  slow_body: 1,
  sr_rate_limit: 1,
} as const;

/**
 * The sink-side faults of the postgres cells: the share of each moment's occurrences (test/support/tcp-proxy.ts)
 * whose connection is reset. A unit sends one CopyData message per ~256 KiB and one COMMIT, and a few queries; the
 * rates keep a unit's four attempts from all failing while every kind strikes in a cell.
 */
export const PG_RESET_RATES: Record<CutMoment, number> = { copy: 0.1, commit: 0.15, query: 0.015 };
/** The fault kinds the proxy reports, as the matrix names them. */
export const PG_FAULTS = CUT_MOMENTS.map((m) => `pg_reset_${m}`);
export interface MatrixOptions {
  seeds?: number[];
  pipelines?: readonly PipelineKind[];
  sinks?: readonly SinkKind[];
  /** Share of responses that get a fault. */
  rate?: number;
  /** Reruns after a failed run, at most. */
  maxReruns?: number;
  /** Cells run at once. */
  parallel?: number;
  /** Progress lines (one per cell). */
  progress?: (line: string) => void;
  /** Keep the cells' directories (pipelines, outputs, logs) for a look. */
  keep?: boolean;
  /** Which of seeds × pipelines × sinks to run (default: all); the clean runs follow the cells kept. */
  cells?: (cell: { seed: number; pipeline: PipelineKind; sink: SinkKind }) => boolean;
}

/** What DuckDB computes over an output: rows, distinct keys, and md5 over the rows' JSON in a fixed order. */
export interface CellResult extends CellRun {
  clean: Digest;
  equal: boolean;
  /** Every paid operation the pipeline needs was started exactly once. */
  paidOnce: boolean;
}

export interface MatrixResult {
  cells: CellResult[];
  seconds: number;
  rate: number;
}

/** The paid operations each pipeline needs, exactly once. */
export const PAID: Record<PipelineKind, string[]> = {
  snapshot: ['filter'],
  serp: [],
  reviews: [],
  deep_lookup: ['trigger', 'enrich'],
};

/** Columns that differ between two correct runs (fetch times, the service's per-request ids). */
export const VOLATILE = ['fetched_at', 'request_id', 'created_at', 'review_reply_created_at'];

export const KEYS: Record<PipelineKind, string> = {
  snapshot: 'id',
  serp: "concat_ws('|', query, page, rank)",
  reviews: 'review_id',
  deep_lookup: 'company_name',
};
export interface CellRun {
  seed: number;
  pipeline: PipelineKind;
  sink: SinkKind;
  /** Runs made: 1 when the first run succeeded. */
  runs: number;
  succeeded: boolean;
  /** Client retries plus units read again, over all runs. */
  retries: number;
  faults: Record<string, number>;
  /** Requests the emulator received, over all runs. */
  requests: number;
  /** Paid operations the emulator started, by kind. */
  paid: Record<string, number>;
  /** Lost answers of paid calls recovered by reconciliation (from the logs). */
  recovered: number;
  /** First line of each failed run's error. */
  failures: string[];
  digest: Digest | undefined;
  seconds: number;
}
/**
 * Each cell draws its faults from a seed of its own (the matrix seed, the pipeline and the sink), so the three sinks
 * of a pipeline do not all see the same faults in the same places.
 */
export function faultSeed(seed: number, pipeline: PipelineKind, sink: SinkKind): number {
  return seed * 100 + PIPELINES.indexOf(pipeline) * 10 + SINKS.indexOf(sink);
}

/** Paid calls are one or two requests per cell: at the common rate hardly any cell would lose one's answer. */
export const PAID_FAULT_RATE = 0.3;

export function faultConfig(c: { seed: number; pipeline: PipelineKind; sink: SinkKind; rate: number }): FaultConfig {
  // A throttled zone for one emulated second: with the cells' fast retry timing (max_delay_ms 1000) the client's
  // holds outlast it within a handful of 429s, so a cell's 429 budget and the emulator's IP block stay out of reach.
  const common = { faults: FAULT_WEIGHTS, retry_after_s: 1, slow_total_ms: 300, throttle_s: 1 };
  const rules = [
    // A lost trigger answer cannot be reconciled (the service lists no lookup requests): the run stops and asks a
    // person (test/sources/deep-lookup-lost-answers.test.ts). The matrix gives the trigger refusals only.
    {
      route: 'POST /datasets/deep_lookup/v1/trigger',
      rate: PAID_FAULT_RATE,
      faults: { '429': 1, '429_retry_after': 1 },
      retry_after_s: 1,
    },
    { route: 'POST /datasets/filter', rate: PAID_FAULT_RATE, ...common },
    { route: 'POST /datasets/deep_lookup/v1/request/:id/enrich', rate: PAID_FAULT_RATE, ...common },
    // Snapshot parts are where bodies are long and gzipped: cut bodies are weighted up there (same rate).
    {
      route: 'GET /datasets/snapshots/:id/download',
      rate: c.rate,
      ...common,
      faults: { ...FAULT_WEIGHTS, reset: 3, truncated_gzip: 3, slow_body: 2 },
    },
    { route: '**', rate: c.rate, ...common },
  ];
  return { seed: faultSeed(c.seed, c.pipeline, c.sink), rules } as FaultConfig;
}
