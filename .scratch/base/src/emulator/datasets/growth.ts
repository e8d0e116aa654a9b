/**
 * Datasets that grow with the emulated calendar. Under a pinned clock (`now`, `POST /_emulator/clock`) a dataset
 * holds its `size` records plus the new ones collected since GROWTH_FROM: about 1% of `size` a day (at least one),
 * record `size + k` collected at a whole hour of day-slot k picked from the seed. Their collection time is the
 * record's `timestamp` (`job_posted_date` for job listings), later than every original record's, which is what an
 * incremental snapshot's cursor (`timestamp > last`) picks up night after night.
 *
 * Whole hours keep a test that sets the clock to half past an hour clear of records appearing mid-run. A job scans
 * the records that existed when it was created, so its snapshot never changes afterwards.
 */
import type { DatasetDef, DatasetRecord } from '../data/datasets-catalogue.js';
import { recordRng } from '../data/record-rng.js';

/** The original records were collected up to here (company profiles: 6 January to 5 February 2025). */
export const GROWTH_FROM = Date.UTC(2025, 1, 5);
const DAY = 86_400_000;
const HOUR = 3_600_000;
const S_GROWTH = 0x67726f;

/** Records a growing dataset gains per emulated day. */
export function newPerDay(size: number): number {
  return Math.max(1, Math.round(size / 100));
}

/** Emulated ms of the k-th new record's collection: a whole hour inside its slot. */
export function collectedAt(seed: number, size: number, k: number): number {
  const slot = DAY / newPerDay(size);
  const hours = Math.max(1, Math.floor(slot / HOUR));
  const offset = recordRng(seed, S_GROWTH, k).int(0, hours - 1) * HOUR;
  return GROWTH_FROM + Math.floor(k * slot) + offset;
}

/** Records of the dataset that exist at emulated time `at` (the original `size` when the clock is not pinned). */
export function sizeAt(seed: number, size: number, at: number, pinned: boolean): number {
  if (!pinned || at < GROWTH_FROM) return size;
  const slot = DAY / newPerDay(size);
  // Slots before `full` are collected for sure by `at`; the slot holding `at` maybe.
  const full = Math.floor((at - GROWTH_FROM) / slot);
  return size + full + (collectedAt(seed, size, full) <= at ? 1 : 0);
}

/** The field a new record's collection time goes to. */
function collectedField(def: DatasetDef): string {
  return 'timestamp' in def.fields ? 'timestamp' : 'job_posted_date';
}

/** The dataset as it grows: records past `size` carry their collection time. */
export function growingDataset(def: DatasetDef, size: number): DatasetDef {
  const field = collectedField(def);
  return {
    ...def,
    record(seed: number, index: number): DatasetRecord {
      const rec = def.record(seed, index);
      if (index < size) return rec;
      rec[field] = new Date(collectedAt(seed, size, index - size)).toISOString();
      return rec;
    },
  };
}
