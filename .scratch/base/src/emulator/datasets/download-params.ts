/**
 * Query parameters of `/datasets/snapshots/{id}/download` and `/parts` (docs/service.md §1.2–1.3): `format`, `compress`,
 * `batch_size` (≥ 1000), `part` (≥ 1), checked with the service's Joi wording and reported together as 400
 * `{validation_errors}`. `ndjson` is accepted as `jsonl` (the service's own message lists it). Unknown
 * parameters are ignored.
 */
import { HttpError } from '../router.js';
import type { SnapshotFormat } from './render.js';

export interface DownloadQuery {
  format: SnapshotFormat;
  compress: boolean;
  batchSize?: number;
  part?: number;
}

export const MIN_BATCH_SIZE = 1000;

export function parseDownloadQuery(q: URLSearchParams, defaultFormat: SnapshotFormat): DownloadQuery {
  const errors: string[] = [];
  const f = q.get('format');
  let format = defaultFormat;
  if (f !== null) {
    if (f === 'json' || f === 'jsonl' || f === 'csv') format = f;
    else if (f === 'ndjson') format = 'jsonl';
    else errors.push('"format" must be one of [json, ndjson, jsonl, csv]');
  }
  const c = q.get('compress');
  let compress = false;
  if (c !== null) {
    if (/^(true|false)$/i.test(c.trim())) compress = c.trim().toLowerCase() === 'true';
    else errors.push('"compress" must be a boolean');
  }
  const batchSize = integer(q.get('batch_size'), 'batch_size', MIN_BATCH_SIZE, errors);
  const part = integer(q.get('part'), 'part', 1, errors);
  if (errors.length > 0) throw new HttpError(400, { validation_errors: errors });
  return {
    format,
    compress,
    ...(batchSize !== undefined && { batchSize }),
    ...(part !== undefined && { part }),
  };
}

function integer(text: string | null, name: string, min: number, errors: string[]): number | undefined {
  if (text === null) return undefined;
  const n = text.trim() === '' ? NaN : Number(text);
  if (!Number.isFinite(n)) errors.push(`"${name}" must be a number`);
  else if (!Number.isInteger(n)) errors.push(`"${name}" must be an integer`);
  else if (n < min) errors.push(`"${name}" must be greater than or equal to ${min}`);
  else return n;
  return undefined;
}

/** Parts of `records` records at `batchSize` per part; without a batch size the snapshot is one part. */
export function partCount(records: number, batchSize: number | undefined): number {
  return batchSize === undefined ? 1 : Math.max(1, Math.ceil(records / batchSize));
}
