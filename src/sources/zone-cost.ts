/**
 * Zone cost and bandwidth (`GET /zone/cost`): one row per bucket. The day buckets are contained in `back_m0`
 * (docs/service.md §7.2), so the rows carry `period` (month/day/custom) and summing across periods double counts.
 *
 * Every field a bucket carries is kept. The documented ones are columns of every row — `cost`, `bw`, `reqs_serp`,
 * `reqs_unblocker`, `range_from`, `range_to` — null where the bucket does not have them (the service sends `bw` and
 * the request counts only on buckets with traffic); any other field is kept under its own name, as the service sent
 * it, and the sink's schema contract decides what becomes of a column it did not have.
 */
import { z } from 'zod';
import type { Row, Source } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { costPeriodProblem, type ZoneCostBucket } from '../client/index.js';
import { oneShotSource } from './one-shot.js';

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD');

export const zoneCostSchema = z
  .object({
    type: z.literal('zone_cost'),
    zones: z.array(z.string().min(1)).min(1).describe('Zone names.'),
    from: day.optional().describe('Start of a custom period (inclusive), YYYY-MM-DD; needs `to`.'),
    to: day.optional().describe('End of a custom period (exclusive), YYYY-MM-DD; needs `from`.'),
  })
  .strict()
  .refine((c) => (c.from === undefined) === (c.to === undefined), { message: 'set both `from` and `to`, or neither' })
  // An impossible day (2025-02-30) passes the pattern; the service would answer it with a 500.
  .superRefine((c, ctx) => {
    const problem = c.from !== undefined && c.to !== undefined ? costPeriodProblem(c.from, c.to) : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: [/^to\b/.test(problem) ? 'to' : 'from'] });
  });
export type ZoneCostConfig = z.infer<typeof zoneCostSchema>;

export const zoneCostSource: ComponentDef<'source', ZoneCostConfig, Source> = {
  kind: 'source',
  type: 'zone_cost',
  description:
    'Cost, bandwidth and request counts per zone: one row per (zone, bucket); six month/day buckets or one custom ' +
    'period; every field the service sends is kept.',
  schema: zoneCostSchema as unknown as z.ZodType<ZoneCostConfig>,
  create: (cfg, deps) =>
    oneShotSource(deps, `GET /zone/cost ${cfg.zones.join(',')}`, async (client) => {
      const rows: Row[] = [];
      for (const zone of cfg.zones)
        rows.push(
          ...costRows(
            zone,
            await client.zones.cost(zone, cfg.from && cfg.to ? { from: cfg.from, to: cfg.to } : undefined),
          ),
        );
      return rows;
    }),
};

/** The counters the service documents (docs/service.md §7.2): columns of every row, null where a bucket lacks them. */
const COUNTERS = ['cost', 'bw', 'reqs_serp', 'reqs_unblocker'] as const;
/** Row columns that a bucket's own fields cannot take over. */
const OWN = new Set(['zone', 'account', 'bucket', 'period', 'range', 'range_from', 'range_to', ...COUNTERS]);

/** One row per (account, bucket) of a zone's cost answer. */
export function costRows(zone: string, answer: Record<string, Record<string, ZoneCostBucket>>): Row[] {
  const rows: Row[] = [];
  for (const [account, buckets] of Object.entries(answer))
    for (const [bucket, v] of Object.entries(buckets)) {
      const row: Row = {
        zone,
        account,
        bucket,
        period: bucket === 'custom' ? 'custom' : bucket.startsWith('back_d') ? 'day' : 'month',
      };
      for (const k of COUNTERS) row[k] = v[k] ?? null;
      row.range_from = v.range?.from ?? null;
      row.range_to = v.range?.to ?? null;
      // What the service sends beyond the documented fields, kept as it came.
      for (const [k, value] of Object.entries(v)) if (!OWN.has(k)) row[k] = value;
      rows.push(row);
    }
  return rows;
}
