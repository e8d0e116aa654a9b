/**
 * What the `serp` and `reviews` sources share: config fields of a crawl, the target URLs, and the durable record
 * of discovered pages.
 *
 * Discovered pages are kept in `ctx.state` as chains: for each query (or fid) the list of page offsets found so
 * far, in page order (`[0, 10, 20]`). A page's successor is written to the chain before the page's `read` ends, so
 * a crash after the page committed still knows the next page, and a resumed run plans exactly the pages of every
 * chain: committed ones are skipped by the engine, the rest fetched. Once a successor is recorded it is kept, so a
 * page read again (a unit retry, or a rerun) cannot fork the chain.
 */
import { z } from 'zod';
import { SluiceError } from '../../core/errors.js';
import { failpoint } from '../../core/failpoints.js';
import type { StateStore } from '../../core/types.js';
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
    .describe('Requests in flight at once, across the whole crawl.'),
  rate_limit: z
    .string()
    .refine(isValidRate, { error: 'rate_limit looks like "20/s", "600/m" or "5000/h"' })
    .optional()
    .describe(
      'Requests per second/minute/hour for the whole crawl ("20/s", "600/m"); slowed down automatically on 429s.',
    ),
  format: z
    .enum(['raw', 'json'])
    .default('raw')
    .describe('`raw`: the response is the page; `json`: the service wraps it in an envelope (unwrapped for you).'),
};

/** Query parameters the crawl sets itself; `params` may not override them. */
export const RESERVED_PARAMS = ['q', 'start', 'num', 'brd_json', 'fid'];

export const extraParamsField = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .default({})
  .refine((p) => Object.keys(p).every((k) => !RESERVED_PARAMS.includes(k)), {
    error: `params may not set ${RESERVED_PARAMS.join(', ')} (the crawl sets them; num is deprecated)`,
  })
  .describe('Extra query parameters of the target URL, e.g. { hl: en, gl: us }.');

/** `{engine}/<path>?<params>&brd_json=1`, in the given parameter order. */
export function targetUrl(engine: string, pathname: string, params: [string, string | number | boolean][]): string {
  const url = new URL(pathname, engine);
  for (const [k, v] of params) url.searchParams.set(k, String(v));
  url.searchParams.set('brd_json', '1');
  return url.toString();
}

/** Page offsets per chain key, in page order. */
export type Chains = Record<string, number[]>;

/** The durable chains of one crawl, under one state key. */
export class ChainStore {
  private chains: Chains;

  constructor(
    private readonly state: StateStore,
    private readonly key: string,
  ) {
    this.chains = { ...(state.get<Chains>(key) ?? {}) };
  }

  /** Offsets known for `chain`: at least the first page. */
  starts(chain: string): number[] {
    return this.chains[chain] ?? [0];
  }

  /** The recorded successor of `start`, if any. */
  nextOf(chain: string, start: number): number | undefined {
    const list = this.chains[chain];
    if (!list) return undefined;
    const i = list.indexOf(start);
    return i >= 0 ? list[i + 1] : undefined;
  }

  /** Record `next` after `start` unless a successor is recorded already; returns the successor in force. */
  async recordNext(chain: string, start: number, next: number): Promise<number> {
    const list = (this.chains[chain] ??= [0]);
    const i = list.indexOf(start);
    if (i < 0) return next; // a page outside the chain (not planned by us): nothing to extend
    const known = list[i + 1];
    if (known !== undefined) return known;
    list.push(next);
    await this.state.set(this.key, this.chains);
    failpoint('crawl:successor-recorded');
    return next;
  }
}

/** The parsed page object; anything else (HTML, a list) means the target URL was not answered as parsed JSON. */
export function pagePayload(payload: unknown, unitId: string): Record<string, unknown> {
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload))
    return payload as Record<string, unknown>;
  throw new SluiceError(`${unitId}: the service returned ${describe(payload)}, not a parsed JSON page`, {
    hint: 'the zone must be a SERP zone that honours brd_json=1; check `zone` and `engine`',
  });
}

function describe(v: unknown): string {
  if (typeof v === 'string') return `text (${v.slice(0, 40).replace(/\s+/g, ' ')}…)`;
  return Array.isArray(v) ? 'a JSON array' : String(v);
}
