/**
 * The crash matrix's cells (bench/crash-matrix.ts): which pipeline and sink each kills where, the cells `npm test`
 * runs, what a cell's result records, and when a cell passed.
 */
import type { FailpointName } from '../../src/core/failpoints.js';
import type { Digest, PipelineKind, SinkKind } from './crash-outputs.js';

/** `name` or `name=N` (see src/core/failpoints.ts). */
export type FailpointSpec = FailpointName | `${FailpointName}=${number}`;
/** At a failpoint, or a kill -9 sent from outside. */
export type Kill = { failpoint: FailpointSpec } | { external: true };

export interface CellSpec {
  pipeline: PipelineKind;
  sink: SinkKind;
  kill: Kill;
}

const external: Kill = { external: true };

/** A cell's pipeline and sink: cells with the same key share a clean run. */
export function cellKey(c: CellSpec): string {
  return `${c.pipeline}/${c.sink}`;
}

function cells(pipeline: PipelineKind, sink: SinkKind, failpoints: FailpointSpec[], outside = false): CellSpec[] {
  return [
    ...failpoints.map((failpoint) => ({ pipeline, sink, kill: { failpoint } })),
    ...(outside ? [{ pipeline, sink, kill: external }] : []),
  ];
}

/**
 * Every cell. Hits are chosen late enough that other units are committed or in flight (two parts are read at a
 * time), early enough that units remain to be read.
 */
export const CELLS: CellSpec[] = [
  // Snapshot → DuckDB append: the native JSONL load (no transform), and the paid job's checkpoints.
  ...cells(
    'snapshot',
    'duckdb',
    [
      'snapshot:job-started',
      'snapshot:job-checkpointed',
      'state:before-rename=4',
      'download:body=60000',
      'duckdb:after-data=2',
      'engine:after-commit=2',
      'engine:before-complete',
    ],
    true,
  ),
  // Snapshot → DuckDB merge: rows from a JS transform.
  ...cells('snapshot', 'duckdb_merge', ['download:body=60000', 'duckdb:after-data=3'], true),
  // Snapshot → Parquet: units are staged, then published several files at a time.
  ...cells(
    'snapshot',
    'parquet',
    [
      'download:body=60000',
      'parquet:staged=2',
      'files:before-manifest=1',
      'files:after-manifest=1',
      'files:after-rename=1',
    ],
    true,
  ),
  // Snapshot → JSONL: the native copy (no transform), units staged and published two to a file.
  ...cells(
    'snapshot',
    'jsonl',
    ['download:body=60000', 'files:before-manifest=2', 'files:after-manifest=2', 'files:after-rename=2'],
    true,
  ),
  // `write: replace`, over the output of an earlier complete run.
  ...cells('snapshot', 'duckdb_replace', ['duckdb:after-data=2', 'duckdb:replace-swap']),
  ...cells('snapshot', 'parquet_replace', ['files:after-rename=1', 'replace:before-swap', 'replace:after-swap']),
  // Killed after the swap but before the run is marked complete, the rerun is a new generation of its own.
  ...cells('snapshot', 'jsonl_replace', ['replace:before-swap', 'replace:after-swap', 'engine:before-complete']),
  // A SERP crawl: pages discovered while reading, into DuckDB.
  ...cells('serp', 'duckdb', ['crawl:successor-recorded=4', 'duckdb:after-data=5', 'engine:after-commit=4'], true),
];

/**
 * The cells `npm test` runs (test/reliability/crash-matrix/): the paid filter job killed on both sides of its
 * checkpoint, and the SERP crawl killed as it discovers a page and from outside. A kill in a sink's commit path is the
 * sink conformance suite's to strike, for every registered sink, in `npm test` (test/sinks/conformance/crash.test.ts
 * and the soak); the full matrix here strikes every failpoint in every sink kind too: `npx tsx bench/crash-matrix.ts`,
 * or `SLUICE_CRASH_MATRIX=full npm test` (CI runs it); `--quick` runs these.
 */
const TEST_CELL_KILLS: Record<string, (FailpointSpec | 'external')[]> = {
  'snapshot/duckdb': ['snapshot:job-started', 'snapshot:job-checkpointed'],
  'serp/duckdb': ['crawl:successor-recorded=4', 'external'],
};

export const TEST_CELLS: CellSpec[] = CELLS.filter((c) =>
  TEST_CELL_KILLS[cellKey(c)]?.includes('external' in c.kill ? 'external' : c.kill.failpoint),
);
// A kill named above that CELLS does not have would silently shrink the test's matrix.
if (TEST_CELLS.length !== Object.values(TEST_CELL_KILLS).flat().length)
  throw new Error('TEST_CELL_KILLS names a cell that CELLS does not have');

export interface CellResult extends CellSpec {
  label: string;
  /** Died by SIGKILL at the failpoint (external: killed before it finished). */
  died: boolean;
  /** How the crash run ended when it did not die as planned. */
  endedAs?: string;
  /** External kills: ms after the emulator counted the second download. */
  killDelayMs?: number;
  /** Rows a reader saw right after the kill (undefined: nothing to read yet). */
  visibleRows: number | undefined;
  /** Complete data files visible right after the kill that the manifest did not commit (must be 0). */
  uncommittedFiles: number;
  /** Committed files not in place right after the kill; the rerun's open moves them in. */
  pendingFiles: number;
  /** What was wrong with what a reader saw right after the kill (partial files, duplicates, …). */
  visibleProblems: string[];
  /** Runs after the crash until one succeeded. */
  reruns: number;
  rerunSucceeded: boolean;
  /** The rerun found the filter job the killed run had started but not checkpointed (no second job). */
  recoveredJob: boolean;
  digest: Digest | undefined;
  clean: Digest;
  equal: boolean;
  /** Paid operations started by the crashed run and its reruns together. */
  paid: Record<string, number>;
  paidOnce: boolean;
  /** Temp, staging, marker, generation or state temp files left after the successful rerun. */
  leftovers: string[];
  failures: string[];
  seconds: number;
  /** Seconds per phase (the earlier run of `replace` cells, crash, checks, reruns), for the progress lines. */
  phases: Record<string, number>;
}

export interface MatrixResult {
  cells: CellResult[];
  seconds: number;
}

export interface MatrixOptions {
  cells?: CellSpec[];
  /** Cells run at once. */
  parallel?: number;
  progress?: (line: string) => void;
  /** Keep the cells' directories (pipeline, outputs, each run's stderr) for a look. */
  keep?: boolean;
}

export function cellLabel(c: CellSpec): string {
  return `${c.pipeline} → ${c.sink} @ ${'external' in c.kill ? 'kill -9 mid-download' : c.kill.failpoint}`;
}

/** The paid operations a run of the pipeline starts, each exactly once. */
export const PAID: Record<PipelineKind, string[]> = { snapshot: ['filter'], serp: [] };
/** It died where planned, nothing partial was visible, one rerun made the clean output, paid once, left nothing. */
export function cellPassed(c: CellResult): boolean {
  return (
    c.died &&
    c.visibleProblems.length === 0 &&
    c.rerunSucceeded &&
    c.reruns === 1 &&
    c.equal &&
    c.paidOnce &&
    c.leftovers.length === 0 &&
    c.failures.length === 0
  );
}
