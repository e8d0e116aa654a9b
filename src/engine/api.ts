/** What the CLI asks of the engine. */

export interface RunOptions {
  /** Forget checkpoints and committed units; start over. */
  fresh: boolean;
  /** Run only the units whose stable hash falls in shard `index` of `count` (0-based index). */
  shard?: { index: number; count: number };
  logFormat: 'text' | 'json';
  quiet: boolean;
  /** Progress bars on a TTY, periodic lines otherwise. */
  progress: boolean;
}

export interface RunSummary {
  pipeline: string;
  units: { total: number; done: number; skipped: number; failed: number };
  records: number;
  bytes: number;
  retries: number;
  deadLetters: number;
  durationMs: number;
  /** Where each sink wrote (paths, tables). */
  outputs: string[];
}

export interface PlanReport {
  pipeline: string;
  source: string;
  /** Units, or a description of the units a paid job would produce (e.g. "parts of the snapshot the filter creates"). */
  units: { id: string; estimatedRecords?: number }[];
  /** HTTP requests the run would make, described (method path), without making paid ones. */
  requests: string[];
  targets: string[];
  estimatedRecords?: number;
  notes: string[];
}
