/**
 * Filter jobs and the snapshots they build, in emulated time (ctx.clock).
 *
 * A job scans the dataset from record 0 in index order, keeps the indices that match (a growing Uint32Array)
 * and stops early once `records_limit` records matched. The scan runs for real in slices of a few milliseconds
 * (setImmediate between them, so the server keeps answering) and its emulated duration is derived from the
 * records scanned, so the timeline is deterministic whatever the machine's speed:
 *
 *   scheduled  for `jobSchedulingMs`, then
 *   building   for scanned / `jobRecordsPerMinute` minutes (and at least until the real scan finished), then
 *   ready      with dataset_size (records), file_size (bytes of the default JSONL rendering), cost, or
 *   failed     `warning_code: no_records_found` when nothing matched, or `error_code: job_timeout` at the 5-minute
 *              mark when the scan would have taken longer (the scan stops as soon as that is certain).
 */
import type { EmulatorContext } from '../context.js';
import type { DatasetDef } from '../data/datasets-catalogue.js';
import { recordRng } from '../data/record-rng.js';
import type { RecordPredicate } from './filter-compile.js';
import type { UploadedFile } from './filter-files.js';
import { growingDataset, sizeAt } from './growth.js';

export type SnapshotStatus = 'scheduled' | 'building' | 'ready' | 'failed';

/** The service cancels filter jobs that run longer than this (spec "Limits"). */
export const JOB_LIMIT_MS = 5 * 60_000;
/** Dollars per record placed in a snapshot. */
export const PRICE_PER_RECORD = 0.0025;
export const CUSTOMER_ID = 'c_emulator';
export const TIMEOUT_ERROR = 'Job was cancelled: it exceeded the 5-minute limit';
export const NO_MATCH_WARNING = 'Provided filter did not match any records';
/** Every file size up to this many records is summed exactly; past it, every 32nd record is measured. */
const EXACT_SIZE_RECORDS = 20_000;
const SIZE_SAMPLE_EVERY = 32;
/** Real milliseconds of scanning between yields to the event loop. */
const SLICE_MS = 8;

export interface SnapshotMeta {
  id: string;
  created: string;
  status: SnapshotStatus;
  dataset_id: string;
  customer_id: string;
  initiation_type: 'filter_api';
  dataset_size?: number;
  file_size?: number;
  cost?: number;
  error?: string;
  error_code?: string;
  warning?: string;
  warning_code?: string;
}

/** The job as the client asked for it: enough for another emulator instance to run the same job again. */
export interface JobRecipe {
  /** The `filter` object as sent (validated). */
  filter: unknown;
  files: UploadedFile[];
  recordsLimit?: number;
}

export class SnapshotJob {
  private matches = new Uint32Array(1024);
  private matchCount = 0;
  private scanned = 0;
  private scanDone = false;
  private timedOut = false;
  private exactBytes = 0;
  private sampledBytes = 0;
  private sampledRecords = 0;
  private failure: string | undefined;
  /** The snapshot's records were charged to the account (once, when it is first seen ready). */
  private charged = false;

  constructor(
    readonly id: string,
    readonly dataset: DatasetDef,
    /** Emulated epoch ms. */
    readonly createdAt: number,
    private readonly predicate: RecordPredicate,
    readonly recipe: JobRecipe,
    private readonly ctx: EmulatorContext,
  ) {}

  markCharged(): void {
    this.charged = true;
  }

  /** Matching record indices, in dataset order (complete once the snapshot is ready). */
  get indices(): Uint32Array {
    return this.matches.subarray(0, this.matchCount);
  }

  private get rate(): number {
    return this.ctx.options.jobRecordsPerMinute ?? 1_000_000;
  }

  private get schedulingMs(): number {
    return this.ctx.options.jobSchedulingMs ?? 4_000;
  }

  /** Emulated ms from creation to the end of the scan, for `scanned` records. */
  private durationFor(scanned: number): number {
    return this.schedulingMs + (scanned / this.rate) * 60_000;
  }

  /** Scans in slices until done, timed out, or limited. */
  async run(): Promise<void> {
    const { seed } = this.ctx.options;
    // The records that existed when the job was created (a growing dataset gains more later).
    const size = sizeAt(seed, this.ctx.options.size, this.createdAt, this.ctx.clock.pinned);
    const limit = this.recipe.recordsLimit ?? Infinity;
    // Past this many records the job cannot finish inside the 5-minute limit.
    const budget = Math.floor(((JOB_LIMIT_MS - this.schedulingMs) / 60_000) * this.rate);
    let i = 0;
    try {
      while (i < size && this.matchCount < limit) {
        const sliceEnd = performance.now() + SLICE_MS;
        while (i < size && this.matchCount < limit) {
          if (i >= budget) {
            this.timedOut = true;
            break;
          }
          const rec = this.dataset.record(seed, i);
          if (this.predicate(rec)) this.keep(i, rec);
          i++;
          if ((i & 63) === 0 && performance.now() >= sliceEnd) break;
        }
        this.scanned = i;
        if (this.timedOut || this.ctx.closed.aborted) break;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } catch (err) {
      this.failure = `the emulator failed while scanning record ${i}: ${(err as Error).message}`;
    }
    this.scanned = i;
    this.scanDone = true;
  }

  private keep(index: number, rec: Record<string, unknown>): void {
    if (this.matchCount === this.matches.length) {
      const grown = new Uint32Array(this.matches.length * 2);
      grown.set(this.matches);
      this.matches = grown;
    }
    const n = this.matchCount++;
    this.matches[n] = index;
    if (n < EXACT_SIZE_RECORDS) this.exactBytes += jsonlBytes(rec);
    else if (n % SIZE_SAMPLE_EVERY === 0) {
      this.sampledBytes += jsonlBytes(rec);
      this.sampledRecords++;
    }
  }

  /** Bytes of the JSONL rendering: exact for small snapshots, sampled and scaled past EXACT_SIZE_RECORDS. */
  private fileSize(): number {
    const rest = this.matchCount - Math.min(this.matchCount, EXACT_SIZE_RECORDS);
    if (rest === 0 || this.sampledRecords === 0) return this.exactBytes;
    return this.exactBytes + Math.round((this.sampledBytes / this.sampledRecords) * rest);
  }

  status(now: number): SnapshotStatus {
    return this.meta(now).status;
  }

  /** True while the job counts against the per-dataset limit of running jobs. */
  running(now: number): boolean {
    const s = this.status(now);
    return s === 'scheduled' || s === 'building';
  }

  meta(now: number): SnapshotMeta {
    const base = {
      id: this.id,
      created: new Date(this.createdAt).toISOString(),
      dataset_id: this.dataset.id,
      customer_id: CUSTOMER_ID,
      initiation_type: 'filter_api' as const,
    };
    const elapsed = now - this.createdAt;
    if (this.timedOut && elapsed >= JOB_LIMIT_MS)
      return { ...base, status: 'failed', error: TIMEOUT_ERROR, error_code: 'job_timeout' };
    if (elapsed < this.schedulingMs) return { ...base, status: 'scheduled' };
    if (this.failure !== undefined) return { ...base, status: 'failed', error: this.failure, error_code: 'internal' };
    if (!this.scanDone || this.timedOut || elapsed < this.durationFor(this.scanned))
      return { ...base, status: 'building' };
    if (this.matchCount === 0)
      return {
        ...base,
        status: 'failed',
        dataset_size: 0,
        warning: NO_MATCH_WARNING,
        warning_code: 'no_records_found',
      };
    if (!this.charged) {
      this.charged = true;
      this.ctx.stats.chargeRecords(this.matchCount);
      this.ctx.state.changed();
    }
    return {
      ...base,
      status: 'ready',
      dataset_size: this.matchCount,
      file_size: this.fileSize(),
      cost: Math.round(this.matchCount * PRICE_PER_RECORD * 100) / 100,
    };
  }
}

function jsonlBytes(rec: unknown): number {
  return Buffer.byteLength(JSON.stringify(rec)) + 1;
}

/** All snapshots of one emulator. */
export class SnapshotJobs {
  private readonly jobs = new Map<string, SnapshotJob>();
  /** Jobs ever started, including by earlier instances sharing the state file: the serial of the next id. */
  serial = 0;

  constructor(private readonly ctx: EmulatorContext) {}

  /** Creates the job and starts its scan in the background. */
  start(dataset: DatasetDef, predicate: RecordPredicate, recipe: JobRecipe): SnapshotJob {
    const id = `snap_${recordRng(this.ctx.options.seed, 0x5a4, this.serial++).alnum(17)}`;
    return this.launch(id, dataset, this.ctx.clock.now(), predicate, recipe);
  }

  /**
   * A job an earlier instance started. It scans again (the data is the same, so it finds the same records) and
   * keeps its creation time, so its timeline is the one the client saw: a job that was ready is ready once the scan
   * caught up, one that was building becomes ready when it would have.
   */
  resume(id: string, dataset: DatasetDef, createdAt: number, predicate: RecordPredicate, recipe: JobRecipe): void {
    // An earlier instance charged it when it was ready (its count came with the state file).
    this.launch(id, dataset, createdAt, predicate, recipe).markCharged();
  }

  private launch(
    id: string,
    dataset: DatasetDef,
    createdAt: number,
    predicate: RecordPredicate,
    recipe: JobRecipe,
  ): SnapshotJob {
    const grown = this.ctx.clock.pinned ? growingDataset(dataset, this.ctx.options.size) : dataset;
    const job = new SnapshotJob(id, grown, createdAt, predicate, recipe, this.ctx);
    this.jobs.set(id, job);
    void job.run();
    return job;
  }

  get(id: string): SnapshotJob | undefined {
    return this.jobs.get(id);
  }

  all(): SnapshotJob[] {
    return [...this.jobs.values()];
  }

  runningOn(datasetId: string): number {
    const now = this.ctx.clock.now();
    let n = 0;
    for (const j of this.jobs.values()) if (j.dataset.id === datasetId && j.running(now)) n++;
    return n;
  }
}
