/**
 * The incremental sources the nightly scenarios load, each as the suite needs it: its pipeline source, what a full
 * load holds at an emulated time (computed from the emulator's own data, not from another run), and what a night
 * may pay for.
 *
 * - `snapshot`: map place reviews (small records: the emulator generates them fast) with a row-derived cursor (`incremental: { cursor: timestamp }`); a full load holds
 *   every record collected by then; a night pays for one filter job charging exactly the records collected since
 *   the last night.
 * - `reviews`: a review crawl, newest first, `incremental: true`; a full load holds every review the places show; a
 *   night pays for the pages up to the first one that shows a review loaded before.
 * - `files`: local JSONL files, incremental by default; a night adds one file and reads only it.
 */
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { PLACE_REVIEWS_ID, findDataset } from '../../../src/emulator/data/datasets-catalogue.js';
import { reviewIdsAt, reviewPagesUntilKnown } from '../../../src/emulator/data/reviews.js';
import { growingDataset, sizeAt } from '../../../src/emulator/datasets/growth.js';
import type { Obj } from './read.js';

/** The emulator's data seed and dataset size (harness.ts `useService`). */
export const SEED = 1;
export const SIZE = 2000;
export const FIDS = ['0x89c259a9b3117469:0xd134e199a405a163', '0x47e66e2964e34e2d:0x8ddca9ee380ef7e0', '0x1:0x2a'];
const ROWS_PER_FILE = 4;

export interface NightlySource {
  name: 'snapshot' | 'reviews' | 'files';
  /** The pipeline's source and transforms. */
  source: Record<string, unknown>;
  transforms?: Record<string, unknown>[];
  /** The column that identifies a row. */
  key: string;
  /** Before night `night` (1-based) runs: the files source writes the night's file into `dir`. */
  prepare?(dir: string, night: number): void;
  /** A full load's rows at `at` as `[key, value]` pairs (value: what else is compared), sorted. */
  fullLoad(at: number, dir: string): string[];
  /** A table's rows in the same form. */
  loaded(rows: readonly Obj[]): string[];
}

const placeReviews = growingDataset(findDataset(PLACE_REVIEWS_ID)!, SIZE);

export const snapshot: NightlySource = {
  name: 'snapshot',
  source: {
    type: 'snapshot',
    dataset_id: PLACE_REVIEWS_ID,
    filter: { name: 'review_id', operator: 'is_not_null' },
    records_limit: 100_000,
    incremental: { cursor: 'timestamp', initial: '2025-01-01T00:00:00Z' },
    // Several parts on the first night, so a unit commits before another fails or is killed.
    download: { batch_size: 1000 },
    poll: { interval_ms: 20 },
    concurrency: 2,
  },
  key: 'review_id',
  fullLoad: (at) =>
    Array.from({ length: sizeAt(SEED, SIZE, at, true) }, (_, i) => placeReviews.record(SEED, i))
      .map((r) => `${String(r.review_id)} ${new Date(r.timestamp as string).toISOString()}`)
      .sort(),
  loaded: (rows) => rows.map((r) => `${String(r.review_id)} ${new Date(r.timestamp as string).toISOString()}`).sort(),
};

/** Records the service has collected by `at` and not by `before`: what a night's filter job must charge. */
export function newRecords(at: number, before: number | undefined): number {
  return sizeAt(SEED, SIZE, at, true) - (before === undefined ? 0 : sizeAt(SEED, SIZE, before, true));
}

export const reviews: NightlySource = {
  name: 'reviews',
  source: {
    type: 'reviews',
    zone: 'serp_zone',
    fids: FIDS,
    max_pages: 30,
    sort: 'newestFirst',
    incremental: true,
  },
  transforms: [{ type: 'normalize', preset: 'reviews' }],
  key: 'review_id',
  fullLoad: (at) => FIDS.flatMap((fid) => reviewIdsAt(SEED, fid, at)).sort(),
  loaded: (rows) => rows.map((r) => String(r.review_id)).sort(),
};

/**
 * Billed page requests of a night's incremental crawl: per place, the pages (of the sizes the emulator serves) up to
 * the first showing an old review, or up to the empty page after the last when every review is new.
 */
export function reviewPages(at: number, before: number | undefined): number {
  return FIDS.reduce((n, fid) => {
    const total = reviewIdsAt(SEED, fid, at).length;
    const fresh = total - (before === undefined ? 0 : reviewIdsAt(SEED, fid, before).length);
    return n + reviewPagesUntilKnown(SEED, fid, total, fresh);
  }, 0);
}

export const files: NightlySource = {
  name: 'files',
  source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 },
  key: 'id',
  prepare(dir, night) {
    mkdirSync(path.join(dir, 'in'), { recursive: true });
    const rows = Array.from({ length: ROWS_PER_FILE }, (_, i) => ({ id: `n${night}-${i}`, night, n: i }));
    writeFileSync(
      path.join(dir, 'in', `night-${String(night).padStart(2, '0')}.jsonl`),
      rows.map((r) => JSON.stringify(r) + '\n').join(''),
    );
  },
  fullLoad: (_at, dir) =>
    readdirSync(path.join(dir, 'in'))
      .flatMap((f) => {
        const night = Number(/night-(\d+)/.exec(f)![1]);
        return Array.from({ length: ROWS_PER_FILE }, (_, i) => `n${night}-${i}`);
      })
      .sort(),
  loaded: (rows) => rows.map((r) => String(r.id)).sort(),
};

export const NIGHTLY_SOURCES: readonly NightlySource[] = [snapshot, reviews, files];
