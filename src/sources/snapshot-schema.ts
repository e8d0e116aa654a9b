/**
 * The snapshot source's options (`source: {type: snapshot, …}`), checked when the pipeline loads: `sluice validate`
 * reports a bad filter, a missing filter file or an uncapped paid job at its file:line:column, before anything is
 * paid for.
 */
import { z } from 'zod';
import { DEFAULT_MAX_AHEAD_S } from './cursor-bound.js';
import { cursorKind, readCursorValue, type CursorValue } from './cursor-value.js';
import { checkCursorFits, checkFilterFiles, filterSchema } from './filter.js';

export const snapshotDownloadSchema = z
  .object({
    format: z.enum(['jsonl', 'json', 'csv']).default('jsonl').describe('Format the service writes the snapshot in.'),
    compress: z.boolean().default(true).describe('Ask for gzip bodies (decompressed on the fly).'),
    batch_size: z
      .number()
      .int()
      .min(1000)
      .default(10_000)
      .describe('Records per part; each part is one work unit (the service requires at least 1000).'),
  })
  .strict();

export const snapshotSchema = z
  .object({
    type: z.literal('snapshot'),
    dataset_id: z
      .string()
      .regex(/^gd_[a-z0-9]{1,60}$/i, 'a dataset id looks like gd_l1vikfnt1wgvvqz95w')
      .optional()
      .describe('Dataset to filter (`gd_…`). Required with `filter`.'),
    filter: filterSchema
      .optional()
      .describe('Filter object (field filter or and/or group, up to 3 levels). Starts a paid filter job.'),
    files: z
      .array(z.string())
      .default([])
      .describe(
        'Files with filter values (CSV with a header equal to the field name, or a JSON array of objects), relative to the pipeline file; a filter value names one by its file name.',
      ),
    records_limit: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'Most records the filter job places in the snapshot, and so is charged for. Required with `filter` (unless `uncapped: true`).',
      ),
    uncapped: z
      .boolean()
      .default(false)
      .describe(
        'Start the paid filter job without `records_limit`: every matching record goes into the snapshot and is charged. Off: a filter job needs `records_limit`.',
      ),
    incremental: z
      .object({
        cursor: z.string().min(1).describe('Field that grows with new records, e.g. `timestamp`.'),
        initial: z
          .union([z.string(), z.number()])
          .transform(canonicalInitial)
          .describe(
            'Load records whose cursor is above this on the first run, e.g. "2025-01-01T00:00:00Z". Its kind is the cursor\'s: a whole number (ids), a date or a time with its offset (ISO 8601), or other text.',
          ),
        max_ahead_s: z
          .number()
          .int()
          .min(0)
          .default(DEFAULT_MAX_AHEAD_S)
          .describe(
            "A date cursor value later than the run's start plus this many seconds is not taken as the cursor (the record is still loaded, with a warning): one bad date such as 9999-12-31 would otherwise make every later run load nothing. Default 86400 (a day: local times labelled UTC run up to 14 h ahead).",
          ),
      })
      .strict()
      .optional()
      .describe(
        'Load only new records: adds `<cursor> > <largest value loaded>` to the filter (pair with `write: merge`).',
      ),
    snapshot_id: z
      .string()
      .regex(/^(snap|s)_[a-z0-9]{1,60}$/i, 'a snapshot id looks like snap_m2bxug4e2o352v1jv1')
      .optional()
      .describe('Download this existing snapshot instead of filtering.'),
    download: snapshotDownloadSchema.default({ format: 'jsonl', compress: true, batch_size: 10_000 }),
    concurrency: z.number().int().min(1).max(64).default(4).describe('Parts downloaded at once.'),
    poll: z
      .object({
        interval_ms: z.number().int().min(10).default(1000).describe('First wait between status checks.'),
        timeout_s: z.number().positive().default(900).describe('Give up waiting for the snapshot after this long.'),
      })
      .strict()
      .default({ interval_ms: 1000, timeout_s: 900 }),
  })
  .strict()
  .refine((c) => (c.snapshot_id === undefined) !== (c.filter === undefined && c.incremental === undefined), {
    message: 'set exactly one of `filter` (start a filter job) or `snapshot_id` (download an existing snapshot)',
  })
  .refine((c) => (c.filter === undefined && c.incremental === undefined) || c.dataset_id !== undefined, {
    message: '`dataset_id` is required with `filter`',
    path: ['dataset_id'],
  })
  .superRefine(checkFilterFiles)
  .superRefine(checkCursorFits)
  .superRefine(checkPaidJobCapped);

/**
 * A filter job is charged per record placed in its snapshot, and the charge is known only once the job has run
 * (docs/service.md §2.4): without `records_limit` nothing caps it, which is why the vendor's own CLI requires one.
 * So does sluice, unless the pipeline says `uncapped: true`. (A `max_cost` cannot stand in for it: the service
 * publishes no per-record price to turn a budget into a limit before paying.)
 */
function checkPaidJobCapped(
  c: { filter?: unknown; incremental?: unknown; records_limit?: number | undefined; uncapped?: boolean | undefined },
  ctx: z.RefinementCtx,
): void {
  const paid = c.filter !== undefined || c.incremental !== undefined;
  if (paid && c.records_limit === undefined && c.uncapped !== true)
    ctx.addIssue({
      code: 'custom',
      path: ['records_limit'],
      message:
        'a filter job needs `records_limit`: the service charges for every record it places in the snapshot, and without a limit nothing caps that',
      params: {
        hint: 'set source.records_limit to the most records the job may place in the snapshot (and charge for), e.g. `records_limit: 10000`; or set `uncapped: true` to accept a job without a cap',
      },
    });
  if (c.uncapped === true && c.records_limit !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['uncapped'],
      message: '`uncapped: true` and `records_limit` contradict each other',
      params: { hint: 'keep records_limit (a capped job) or uncapped: true (no cap), not both' },
    });
  if (c.uncapped === true && !paid)
    ctx.addIssue({
      code: 'custom',
      path: ['uncapped'],
      message: '`uncapped` applies to a filter job; a snapshot_id names a snapshot already paid for',
      params: { hint: 'remove `uncapped`' },
    });
}

/** `incremental.initial` in its canonical form (cursor-value.ts), or an issue saying what to write instead. */
function canonicalInitial(v: CursorValue, ctx: z.RefinementCtx): CursorValue {
  const kind = cursorKind(v);
  const read = readCursorValue(v, kind);
  if (!('problem' in read)) return read.value;
  ctx.addIssue({
    code: 'custom',
    message: `the initial cursor value: ${read.problem}`,
    params: {
      hint: {
        integer: `a numeric cursor holds whole numbers within ±${Number.MAX_SAFE_INTEGER}`,
        time: 'a date cursor starts from a date, e.g. "2025-01-01" (midnight UTC), or a time with its offset, e.g. "2025-01-01T00:00:00Z" or "2025-01-01T00:00:00+02:00"',
        text: 'a text cursor starts from a text, e.g. "a"',
      }[kind],
    },
  });
  return z.NEVER;
}

export type SnapshotConfig = z.infer<typeof snapshotSchema>;
