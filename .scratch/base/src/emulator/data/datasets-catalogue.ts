/**
 * The emulator's dataset catalogue: what `GET /datasets/list` lists, what `/metadata` describes and what filter
 * jobs scan. Every dataset holds `size` records (the emulator's `size` option), record i being a pure function
 * of (seed, i). Display names carry the real list's quirks (stray and doubled spaces; one name shared by two
 * ids), so clients learn to key on ids.
 */
import { COMPANY_PROFILES_ID, companyProfile, companyProfileFields } from './company-profiles.js';
import type { DatasetFields } from './dataset-fields.js';
import { JOB_LISTINGS_ID, jobListing, jobListingFields } from './job-listings.js';
import { PLACE_REVIEWS_ID, placeReview, placeReviewFields } from './place-reviews.js';

export type DatasetRecord = Record<string, unknown>;

export interface DatasetDef {
  id: string;
  name: string;
  fields: DatasetFields;
  /** Record `index` of the dataset. Distinct datasets sharing a generator get distinct seeds. */
  record(seed: number, index: number): DatasetRecord;
}

/** A second, independent place-reviews dataset: same shape, same display name, other records. */
const PLACE_REVIEWS_ARCHIVE_ID = 'gd_m2qz7r1vn4t8ce0hd';

export const DATASETS: readonly DatasetDef[] = [
  {
    id: COMPANY_PROFILES_ID,
    name: 'Professional network company profiles',
    fields: companyProfileFields,
    record: companyProfile,
  },
  { id: PLACE_REVIEWS_ID, name: 'Map place reviews ', fields: placeReviewFields, record: placeReview },
  {
    id: PLACE_REVIEWS_ARCHIVE_ID,
    name: 'Map place reviews ',
    fields: placeReviewFields,
    record: (seed, index) => placeReview(seed + 0x7f4a7c15, index),
  },
  { id: JOB_LISTINGS_ID, name: 'Job listings  information', fields: jobListingFields, record: jobListing },
];

export function findDataset(id: string): DatasetDef | undefined {
  return DATASETS.find((d) => d.id === id);
}

/** The records at `indices` (ascending or not), generated one at a time as iterated. */
export function* recordsAt(
  def: DatasetDef,
  seed: number,
  indices: ArrayLike<number>,
  from = 0,
  to = indices.length,
): Generator<DatasetRecord> {
  for (let k = from; k < to; k++) yield def.record(seed, indices[k] as number);
}

export { COMPANY_PROFILES_ID, JOB_LISTINGS_ID, PLACE_REVIEWS_ID, PLACE_REVIEWS_ARCHIVE_ID };
