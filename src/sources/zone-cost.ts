/**
 * Zone cost and bandwidth (`GET /zone/cost`): one row per bucket. The day buckets are contained in `back_m0`
 * (docs/service.md §7.2), so the rows carry `period` (month/day/custom) and summing across periods double counts.
 */
import { z } from 'zod';
import type { Row, Source } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { costPeriodProblem } from '../client/index.js';
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
  description: 'Cost and bandwidth per zone: one row per (zone, bucket); six month/day buckets or one custom period.',
  schema: zoneCostSchema as unknown as z.ZodType<ZoneCostConfig>,
  create: (cfg, deps) =>
    oneShotSource(deps, `GET /zone/cost ${cfg.zones.join(',')}`, async (client) => {
      const rows: Row[] = [];
      for (const zone of cfg.zones) {
        const res = await client.zones.cost(zone, cfg.from && cfg.to ? { from: cfg.from, to: cfg.to } : undefined);
        for (const [account, buckets] of Object.entries(res))
          for (const [bucket, v] of Object.entries(buckets))
            rows.push({
              zone,
              account,
              bucket,
              period: bucket === 'custom' ? 'custom' : bucket.startsWith('back_d') ? 'day' : 'month',
              cost: v.cost ?? null,
              bw: v.bw ?? null,
              range_from: v.range?.from ?? null,
              range_to: v.range?.to ?? null,
            });
      }
      return rows;
    }),
};
