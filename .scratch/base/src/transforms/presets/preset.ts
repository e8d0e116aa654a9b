/** What every normalizer preset is: one input row (a page or a record) → zero or more output rows. */
import type { Row, TransformContext } from '../../core/types.js';
import { isTimestamp, parseIsoTimestamp } from '../../core/values.js';

export interface PresetOptions {
  /** Keep inline `data:` image payloads (icons, thumbnails, logos) instead of dropping them. */
  keepImageData: boolean;
}

export type PresetFn = (row: Row, ctx: TransformContext, opts: PresetOptions) => Row[];

/**
 * When the page this row came from was fetched: the row's own `fetched_at` (ISO string or Date), which the crawl
 * sources put on every page row. null when the row does not say (a page read back from a file without it, or one
 * review of a page split by a decoder): each preset then falls back as it documents.
 */
export function rowFetchedAt(row: Row): Date | null {
  const v = row.fetched_at;
  if (isTimestamp(v)) return v;
  return parseIsoTimestamp(v);
}
