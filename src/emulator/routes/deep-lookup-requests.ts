/**
 * A deep lookup request as the emulator keeps it: what was asked (query, columns, enrichments), its job, what it
 * costs, the rows it holds at a given emulated time, and how it is saved in the state file. Apart from the routes
 * (deep-lookup.ts) because both the answers and the state file derive from it; the routes only read and change it.
 */
import { z } from 'zod';
import { lookupCell, lookupRow, type LookupColumn, type LookupRow, type QueryPlan } from '../data/deep-lookup.js';
import { enrichedRows, enrichmentCompleted, type JobView, type LookupJob } from '../data/deep-lookup-lifecycle.js';

/** Published prices (docs/service.md §4.4): $1.00 per matched record, $0.05 per enriched record. */
export const CENTS_PER_RECORD = 100;
export const CENTS_PER_ENRICHED_RECORD = 5;
/** What the emulated account can spend on one request (cents). */
export const BALANCE_CENTS = 1_000_000;

export interface Preview {
  id: string;
  query: string;
  createdAt: number;
  plan: QueryPlan;
}

interface Enrichment {
  column: LookupColumn;
  requestedAt: number;
}

export interface LookupRequest {
  id: string;
  query: string;
  title: string;
  resultLimit: number;
  columns: LookupColumn[];
  enrichments: Enrichment[];
  job: LookupJob;
}

/**
 * In the state file: previews and requests as they are (their figures are derived from the query and the seed, so
 * previews keep only what the client sent), and the id serial, so a restarted emulator never reuses an id.
 */
const lookupColumnSchema = z.object({
  name: z.string(),
  description: z.string(),
  type: z.enum(['enrichment', 'constraint']),
});
export const savedDeepLookupSchema = z.object({
  serial: z.number().int().nonnegative(),
  previews: z.array(z.object({ id: z.string(), query: z.string(), created_at: z.number() })),
  requests: z.array(
    z.object({
      id: z.string(),
      query: z.string(),
      title: z.string(),
      resultLimit: z.number().int().positive(),
      columns: z.array(lookupColumnSchema),
      enrichments: z.array(z.object({ column: lookupColumnSchema, requestedAt: z.number() })),
      job: z.object({
        startedAt: z.number(),
        matched: z.number(),
        skipped: z.number(),
        pagesConsidered: z.number(),
        pagesRead: z.number(),
        fails: z.boolean(),
        cancelledAt: z.number().optional(),
      }),
    }),
  ),
});

/** Base columns then enrichments, in the order they were added. */
export function allColumns(r: LookupRequest): LookupColumn[] {
  return [...r.columns, ...r.enrichments.map((e) => e.column)];
}

export function* rowsOf(seed: number, r: LookupRequest, count: number, now: number): Generator<LookupRow> {
  const filled = r.enrichments.map((e) => enrichedRows(e.requestedAt, r.job.matched, now));
  for (let i = 0; i < count; i++) {
    const row = lookupRow(seed, r.query, i, r.columns);
    r.enrichments.forEach((e, k) => {
      row[e.column.name] = i < filled[k]! ? lookupCell(seed, r.query, i, e.column) : null;
    });
    yield row;
  }
}

export function costCents(r: LookupRequest, v: JobView, now: number): number {
  if (v.status === 'failed') return 0;
  const enriched = r.enrichments.filter((e) => enrichmentCompleted(e.requestedAt, r.job.matched, now)).length;
  return v.matched * CENTS_PER_RECORD + enriched * r.job.matched * CENTS_PER_ENRICHED_RECORD;
}

export function money(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}
