/**
 * What a `deep_lookup` source is configured with. Apart from the source (deep-lookup.ts) because the budget, wait
 * and enrichment parts read the config's type too, and importing it from the source that imports them would be a
 * cycle; deep-lookup.ts re-exports it, so its importers need not know.
 */
import { z } from 'zod';
import { moneySchema } from './money.js';

export const deepLookupSchema = z
  .object({
    type: z.literal('deep_lookup'),
    query: z
      .string()
      .regex(/^Find all/i, 'a deep lookup query starts with "Find all"')
      .optional()
      .describe('Natural-language query ("Find all …"); a preview is created, then the full request triggered.'),
    preview_id: z
      .string()
      .regex(/^dld_[a-z0-9]{1,60}$/i, 'a preview id looks like dld_…, letters and digits')
      .optional()
      .describe('Trigger from an existing preview (`dld_…`).'),
    request_id: z
      .string()
      .regex(/^ai_[a-z0-9]{1,60}$/i, 'a request id looks like ai_…, letters and digits')
      .optional()
      .describe('Download an existing request (`ai_…`); nothing is triggered.'),
    result_limit: z.number().int().positive().optional().describe('Maximum records the request may match.'),
    enrich: z
      .array(z.object({ column_name: z.string().min(1), query: z.string().min(1) }).strict())
      .default([])
      .describe('Columns to add to the request before downloading (paid per matched record).'),
    max_cost: moneySchema
      .optional()
      .describe('Refuse to trigger or enrich when the worst-case cost would exceed this amount, e.g. "$50.00".'),
    download: z
      .object({ format: z.enum(['json', 'csv']).default('json').describe('Export format (excel is not available).') })
      .strict()
      .default({ format: 'json' }),
    poll: z
      .object({
        interval_ms: z.number().int().min(10).default(1000),
        timeout_s: z.number().positive().default(1800),
        enrich_settle_s: z
          .number()
          .positive()
          .default(60)
          .describe(
            'An enrichment shows no status: it is taken as done when every row has a value, or when some do and ' +
              'none has been added for this long (the service’s time).',
          ),
      })
      .strict()
      .default({ interval_ms: 1000, timeout_s: 1800, enrich_settle_s: 60 })
      .describe('Status polling of the preview, the request and enrichments (each bounded by timeout_s).'),
  })
  .strict()
  .refine((c) => [c.query, c.preview_id, c.request_id].filter((x) => x !== undefined).length === 1, {
    message: 'set exactly one of `query`, `preview_id` or `request_id`',
  });

export type DeepLookupConfig = z.infer<typeof deepLookupSchema>;
