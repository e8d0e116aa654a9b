/** Config fields every crawl source shares (`serp`, `reviews`): zone, engine, concurrency, rate, response format. */
import { z } from 'zod';
import { isValidRate } from './rate-limit.js';

export const crawlFields = {
  zone: z.string().min(1).describe('Zone (of the search type) the requests go through.'),
  engine: z
    .url({ protocol: /^https?$/, error: 'engine must be an http(s) URL such as https://www.google.com' })
    .default('https://www.google.com')
    .describe('Search engine the target URLs are built on.'),
  concurrency: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe(
      'Requests in flight at once, across the whole crawl; at most 20 per service address (the client’s 429 budget keeps the IP under the service’s block), after a slow start.',
    ),
  rate_limit: z
    .string()
    .refine(isValidRate, { error: 'rate_limit looks like "20/s", "600/m" or "5000/h"' })
    .optional()
    .describe(
      'Requests per second/minute/hour for the whole crawl ("20/s", "600/m"), shared by its shards (each `--shard i/n` takes 1/n of it); slowed down automatically on 429s.',
    ),
  format: z
    .enum(['raw', 'json'])
    .default('raw')
    .describe('`raw`: the response is the page; `json`: the service wraps it in an envelope (unwrapped for you).'),
};

/** The shared fields once parsed. */
export type CrawlConfig = z.infer<z.ZodObject<typeof crawlFields>>;

/** Query parameters the crawl sets itself; `params` may not override them. */
export const RESERVED_PARAMS = ['q', 'start', 'num', 'brd_json', 'fid'];

export const extraParamsField = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .default({})
  .refine((p) => Object.keys(p).every((k) => !RESERVED_PARAMS.includes(k)), {
    error: `params may not set ${RESERVED_PARAMS.join(', ')} (the crawl sets them; num is deprecated)`,
  })
  .describe('Extra query parameters of the target URL, e.g. { hl: en, gl: us }.');

export type ExtraParams = z.infer<typeof extraParamsField>;

const REFRESH = /^(\d+)(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A refresh period, `"7d"`, `"12h"` or `"90m"` (`"0m"`: every run). */
export const refreshPeriod = z.string().regex(REFRESH, 'a duration such as "7d", "12h" or "90m"');

/** A refresh period (`refreshPeriod`) in ms. */
export function refreshMs(period: string): number {
  const m = REFRESH.exec(period)!;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}
