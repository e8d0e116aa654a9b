/** What every normalizer preset is: one input row (a page or a record) → zero or more output rows. */
import type { Row, TransformContext } from '../../core/types.js';
import { isTimestamp, parseIsoTimestamp } from '../../core/values.js';

export interface PresetOptions {
  /** Keep inline `data:` image payloads (icons, thumbnails, logos) instead of dropping them. */
  keepImageData: boolean;
}

export type PresetFn = (row: Row, ctx: TransformContext, opts: PresetOptions) => Row[];

/**
 * When the unit's page was fetched: `unitParams.fetched_at` (ISO string or Date). Read per call, because a crawl
 * source learns the fetch time only while reading the unit.
 */
export function unitFetchedAt(ctx: TransformContext): Date | null {
  const v = ctx.unitParams.fetched_at;
  if (isTimestamp(v)) return v;
  return parseIsoTimestamp(v);
}
