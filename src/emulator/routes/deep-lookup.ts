/**
 * Deep lookup under `/datasets/deep_lookup/v1` (docs/service.md §4): preview → trigger (paid) → status → data → download,
 * enrich (paid) and cancel, plus `enhance_query`. Data comes from data/deep-lookup.ts, states from the emulated
 * clock (data/deep-lookup-lifecycle.ts), file layouts from data/deep-lookup-export.ts.
 *
 * Choices where the service documents nothing (docs/service.md §4.3, §4.4, §9.4):
 * - Errors use the deep-lookup envelope `{"error": {"code", "message", "details"}}` with the documented codes only:
 *   invalid input (body, query, column, `format`) → 400 `INVALID_QUERY`; unknown request or preview id → 404
 *   `REQUEST_NOT_FOUND`; a bound above the emulated account's $10,000.00 → 402 `INSUFFICIENT_CREDITS`; an operation
 *   the request's state does not allow (download before `completed` or of a `failed` request, enrich before
 *   `completed`, cancel after the end) → 409 `PROCESSING_ERROR` with a message that says what to wait for.
 * - `format=excel` → 400 saying it is not available; no `format` means `json`. A `cancelled` request downloads the
 *   records collected before the cancel.
 * - Trigger without `result_limit` uses 100. `max_cost` is `result_limit` × $1.00 (published price per matched
 *   record); `total_cost` counts collected records, plus $0.05 per matched record for each completed enrichment;
 *   a failed request costs nothing.
 * - Bodies are arrays of one item, as the schema says; trigger and preview also take the bare object the official
 *   code examples send. Enrich takes one column per call (its answer describes one column).
 * - An enrichment has no status anywhere (docs/service.md §4.2: none is documented): `GET /request/{id}` lists its
 *   column at once, and the column's values fill in, row after row, on later reads; a value the lookup found nothing
 *   for stays null. `enrichmentStatus: true` (a test's switch) adds the `enrichments: [{column_name, status}]` that
 *   older emulators invented.
 */
import { z } from 'zod';
import type { EmulatorContext } from '../context.js';
import { HttpError, type EmuRequest, type Router } from '../router.js';
import {
  PREVIEW_ROWS,
  defaultColumns,
  lookupCell,
  lookupRow,
  queryPlan,
  type LookupColumn,
  type LookupRow,
  type QueryPlan,
} from '../data/deep-lookup.js';
import { csvExport, jsonExport } from '../data/deep-lookup-export.js';
import {
  enrichedRows,
  enrichmentCompleted,
  jobView,
  previewStatus,
  type JobView,
  type LookupJob,
} from '../data/deep-lookup-lifecycle.js';
import { serpRng } from '../data/serp-rng.js';

const BASE = '/datasets/deep_lookup/v1';
const DEFAULT_RESULT_LIMIT = 100;
const CENTS_PER_RECORD = 100;
const CENTS_PER_ENRICHED_RECORD = 5;
/** What the emulated account can spend on one request (cents). */
const BALANCE_CENTS = 1_000_000;

interface Preview {
  id: string;
  query: string;
  createdAt: number;
  plan: QueryPlan;
}

interface Enrichment {
  column: LookupColumn;
  requestedAt: number;
}

interface LookupRequest {
  id: string;
  query: string;
  title: string;
  resultLimit: number;
  columns: LookupColumn[];
  enrichments: Enrichment[];
  job: LookupJob;
}

const queryText = z
  .string()
  .refine((q) => /^\s*find all\b/i.test(q), { message: 'must start with "Find all"' })
  .refine((q) => q.trim().length > 'find all'.length, { message: 'must say what to find after "Find all"' });

const resultLimit = z.number().int().positive();

const previewItem = z.object({ query: queryText });

const specColumn = z.object({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be letters, digits and underscores'),
  description: z.string().default(''),
  type: z.enum(['enrichment', 'constraint']),
});

const fromPreview = z.object({ preview_id: z.string().min(1), result_limit: resultLimit.optional() });

const fromQuery = z.object({
  query: queryText,
  spec: z
    .object({
      name: z.string().optional(),
      query: z.string().optional(),
      title: z.string().optional(),
      columns: z
        .array(specColumn)
        .min(1)
        .refine((cols) => new Set(cols.map((c) => c.name)).size === cols.length, {
          message: 'column names must be distinct',
        }),
    })
    .optional(),
  result_limit: resultLimit.optional(),
});

const enrichItem = z.object({
  column_name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be letters, digits and underscores'),
  query: z.string().trim().min(1, 'must say what to find for each record'),
});

/**
 * In the state file: previews and requests as they are (their figures are derived from the query and the seed, so
 * previews keep only what the client sent), and the id serial, so a restarted emulator never reuses an id.
 */
const lookupColumnSchema = z.object({
  name: z.string(),
  description: z.string(),
  type: z.enum(['enrichment', 'constraint']),
});
const savedDeepLookupSchema = z.object({
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

export function register(router: Router, ctx: EmulatorContext): void {
  const seed = ctx.options.seed;
  const previews = new Map<string, Preview>();
  const requests = new Map<string, LookupRequest>();
  let serial = 0;
  const saved = ctx.state.section('deep_lookup', savedDeepLookupSchema, () => ({
    serial,
    previews: [...previews.values()].map((p) => ({ id: p.id, query: p.query, created_at: p.createdAt })),
    requests: [...requests.values()],
  }));
  if (saved) {
    serial = saved.serial;
    for (const p of saved.previews)
      previews.set(p.id, { id: p.id, query: p.query, createdAt: p.created_at, plan: queryPlan(seed, p.query) });
    for (const r of saved.requests) requests.set(r.id, r);
  }
  const newId = (prefix: string): string => `${prefix}${base36(serpRng(seed, 'deep-lookup-id', prefix, serial++), 18)}`;
  const now = (): number => ctx.clock.now();

  const findRequest = (id: string): LookupRequest => {
    const r = requests.get(id);
    if (!r) throw notFound(`request ${id} not found`, 'request ids come from POST /trigger and look like ai_…');
    return r;
  };

  router.post(`${BASE}/preview`, async (req, res) => {
    const item = parse(previewItem, oneItem(await bodyJson(req), true));
    const query = item.query.trim();
    const preview: Preview = { id: newId('dld_'), query, createdAt: now(), plan: queryPlan(seed, query) };
    previews.set(preview.id, preview);
    await ctx.state.commit();
    res.json(200, { preview_id: preview.id, columns: exampleColumns(seed, query) });
  });

  router.get(`${BASE}/preview/:id`, (req, res) => {
    const p = previews.get(req.params.id!);
    if (!p)
      throw notFound(`preview ${req.params.id} not found`, 'preview ids come from POST /preview and look like dld_…');
    const status = previewStatus(p.createdAt, p.plan.failsPreview, now());
    const columns = defaultColumns(p.query);
    const sample =
      status === 'completed'
        ? range(Math.min(PREVIEW_ROWS, p.plan.available)).map((i) => lookupRow(seed, p.query, i, columns))
        : [];
    res.json(200, {
      preview_id: p.id,
      query: p.query,
      status,
      sample_data: sample,
      columns: exampleColumns(seed, p.query),
      result_limit: PREVIEW_ROWS,
      ...(status === 'failed' && {
        error: { code: 'PROCESSING_ERROR', message: 'the preview could not be generated', details: p.id },
      }),
    });
  });

  router.post(`${BASE}/enhance_query`, async (req, res) => {
    const item = parse(previewItem, oneItem(await bodyJson(req), true));
    const query = item.query.trim().replace(/[.\s]+$/, '');
    res.json(200, { enhanced_query: `${query}, with their website, founding date, employee count and headquarters` });
  });

  router.post(`${BASE}/trigger`, async (req, res) => {
    const raw = oneItem(await bodyJson(req), true);
    // The two trigger forms are told apart by `preview_id`, so errors name the fields of the form meant.
    const item = isObject(raw) && 'preview_id' in raw ? parse(fromPreview, raw) : parse(fromQuery, raw);
    let query: string;
    let columns: LookupColumn[];
    let title: string | undefined;
    if ('preview_id' in item) {
      const p = previews.get(item.preview_id);
      if (!p)
        throw notFound(`preview ${item.preview_id} not found`, 'trigger from a preview_id returned by POST /preview');
      query = p.query;
      columns = defaultColumns(query);
    } else {
      query = item.query.trim();
      columns = item.spec ? item.spec.columns.map((c) => ({ ...c })) : defaultColumns(query);
      title = item.spec?.title;
    }
    const limit = item.result_limit ?? DEFAULT_RESULT_LIMIT;
    const maxCostCents = limit * CENTS_PER_RECORD;
    if (maxCostCents > BALANCE_CENTS)
      throw dlError(
        402,
        'INSUFFICIENT_CREDITS',
        `the request may cost up to ${money(maxCostCents)}, more than the account's balance of ${money(BALANCE_CENTS)}`,
        `result_limit ${limit}: lower it or add funds`,
      );
    const plan = queryPlan(seed, query);
    const matched = Math.min(limit, plan.available);
    const skipped = Math.floor((matched * plan.skipRatePct) / (100 - plan.skipRatePct));
    const pagesConsidered = matched * 3 + skipped * 2 + 20;
    const request: LookupRequest = {
      id: newId('ai_'),
      query,
      title: title ?? plan.title,
      resultLimit: limit,
      columns,
      enrichments: [],
      job: {
        startedAt: now(),
        matched,
        skipped,
        pagesConsidered,
        pagesRead: Math.floor(pagesConsidered * 0.7),
        fails: plan.failsRequest,
      },
    };
    requests.set(request.id, request);
    ctx.stats.countPaid('trigger');
    await ctx.state.commit();
    res.json(200, { request_id: request.id, status: 'queued', max_cost: money(maxCostCents) });
  });

  router.get(`${BASE}/request/:id/status`, (req, res) => {
    const r = findRequest(req.params.id!);
    const v = jobView(r.job, now());
    res.json(200, {
      request_id: r.id,
      status: v.status,
      progress: v.progress,
      pages_read: v.pagesRead,
      pages_considered: v.pagesConsidered,
      matched_records: v.matched,
      is_trial: false,
      result_limit: r.resultLimit,
    });
  });

  router.get(`${BASE}/request/:id`, (req, res) => {
    const r = findRequest(req.params.id!);
    const t = now();
    const v = jobView(r.job, t);
    const columns = v.hasSchema ? allColumns(r) : [];
    res.json(200, {
      request_id: r.id,
      query: r.query,
      status: v.status,
      title: r.title,
      step: v.step,
      matched_records: v.matched,
      skipped_records: v.skipped,
      pages_read: v.pagesRead,
      pages_considered: v.pagesConsidered,
      total_cost: money(costCents(r, v, t)),
      columns,
      data: [...rowsOf(seed, r, v.matched, t)],
      ...(ctx.options.enrichmentStatus === true && {
        enrichments: r.enrichments.map((e) => ({
          column_name: e.column.name,
          status: enrichmentCompleted(e.requestedAt, r.job.matched, t) ? 'completed' : 'processing',
        })),
      }),
      ...(v.status === 'failed' && {
        error: {
          code: 'PROCESSING_ERROR',
          message: 'the request failed while generating results',
          details: `step ${v.step}, ${v.matched} records collected`,
        },
      }),
    });
  });

  router.get(`${BASE}/request/:id/download`, async (req, res) => {
    const r = findRequest(req.params.id!);
    const format = req.query.get('format') ?? 'json';
    if (format === 'excel')
      throw dlError(400, 'INVALID_QUERY', 'format "excel" is not available yet: use format=json or format=csv', format);
    if (format !== 'json' && format !== 'csv')
      throw dlError(400, 'INVALID_QUERY', '"format" must be one of [json, csv]', `format=${format}`);
    const t = now();
    const v = jobView(r.job, t);
    if (v.status !== 'completed' && v.status !== 'cancelled') throw notDownloadable(r, v);
    const rows = rowsOf(seed, r, v.matched, t);
    const names = allColumns(r).map((c) => c.name);
    const headers = {
      'content-type': format === 'json' ? 'application/json; charset=utf-8' : 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${r.id}.${format}"`,
    };
    await res.stream(200, headers, format === 'json' ? iterate(jsonExport(rows)) : iterate(csvExport(names, rows)));
  });

  router.post(`${BASE}/request/:id/enrich`, async (req, res) => {
    const r = findRequest(req.params.id!);
    const item = parse(enrichItem, oneItem(await bodyJson(req), false));
    if (allColumns(r).some((c) => c.name === item.column_name))
      throw dlError(
        400,
        'INVALID_QUERY',
        `column ${item.column_name} already exists in request ${r.id}`,
        item.column_name,
      );
    const t = now();
    const v = jobView(r.job, t);
    if (v.status !== 'completed')
      throw dlError(
        409,
        'PROCESSING_ERROR',
        `request ${r.id} is ${v.status}: columns can be added once its status is completed`,
        `status ${v.status}, step ${v.step}`,
      );
    ctx.stats.countPaid('enrich');
    r.enrichments.push({
      column: { name: item.column_name, description: item.query.trim(), type: 'enrichment' },
      requestedAt: t,
    });
    await ctx.state.commit();
    res.json(200, {
      column_name: item.column_name,
      status: 'processing',
      max_additional_cost: money(r.job.matched * CENTS_PER_ENRICHED_RECORD),
    });
  });

  router.post(`${BASE}/request/:id/cancel`, async (req, res) => {
    const r = findRequest(req.params.id!);
    const t = now();
    let v = jobView(r.job, t);
    if (v.status === 'completed' || v.status === 'failed')
      throw dlError(409, 'PROCESSING_ERROR', `request ${r.id} already ended ${v.status}: nothing to cancel`, v.status);
    // Cancelling twice answers the same: a retried cancel must not fail.
    if (r.job.cancelledAt === undefined) {
      r.job.cancelledAt = t;
      v = jobView(r.job, t);
      await ctx.state.commit();
    }
    res.json(200, {
      request_id: r.id,
      status: 'cancelled',
      step: v.step,
      matched_records: v.matched,
      total_cost: money(costCents(r, v, t)),
    });
  });
}

/** Base columns then enrichments, in the order they were added. */
function allColumns(r: LookupRequest): LookupColumn[] {
  return [...r.columns, ...r.enrichments.map((e) => e.column)];
}

function* rowsOf(seed: number, r: LookupRequest, count: number, now: number): Generator<LookupRow> {
  const filled = r.enrichments.map((e) => enrichedRows(e.requestedAt, r.job.matched, now));
  for (let i = 0; i < count; i++) {
    const row = lookupRow(seed, r.query, i, r.columns);
    r.enrichments.forEach((e, k) => {
      row[e.column.name] = i < filled[k]! ? lookupCell(seed, r.query, i, e.column) : null;
    });
    yield row;
  }
}

function costCents(r: LookupRequest, v: JobView, now: number): number {
  if (v.status === 'failed') return 0;
  const enriched = r.enrichments.filter((e) => enrichmentCompleted(e.requestedAt, r.job.matched, now)).length;
  return v.matched * CENTS_PER_RECORD + enriched * r.job.matched * CENTS_PER_ENRICHED_RECORD;
}

/** The preview's `columns`: one object naming every column with an example value (the first row's, if any). */
function exampleColumns(seed: number, query: string): Record<string, unknown>[] {
  const columns = defaultColumns(query);
  return [lookupRow(seed, query, 0, columns)];
}

function notDownloadable(r: LookupRequest, v: JobView): HttpError {
  if (v.status === 'failed')
    return dlError(
      409,
      'PROCESSING_ERROR',
      `request ${r.id} failed: there are no results to download`,
      'status failed',
    );
  return dlError(
    409,
    'PROCESSING_ERROR',
    `request ${r.id} is ${v.status} (step ${v.step}, ${v.progress}%): download it once GET /request/${r.id}/status says completed`,
    `status ${v.status}`,
  );
}

function dlError(status: number, code: string, message: string, details: string): HttpError {
  return new HttpError(status, { error: { code, message, details } });
}

function notFound(message: string, details: string): HttpError {
  return dlError(404, 'REQUEST_NOT_FOUND', message, details);
}

/** The body as JSON, with a bad body reported in this API's envelope (not the marketplace's). */
function bodyJson(req: EmuRequest): Promise<unknown> {
  return req.json((text) => dlError(400, 'INVALID_QUERY', 'the request body is not valid JSON', text.slice(0, 200)));
}

/** The one item of an array body (or, when `bareObject`, a body that is the item itself). */
function oneItem(value: unknown, bareObject: boolean): unknown {
  if (Array.isArray(value)) {
    if (value.length !== 1)
      throw dlError(400, 'INVALID_QUERY', `the body must be an array of exactly one item (got ${value.length})`, '');
    return value[0];
  }
  if (!bareObject) throw dlError(400, 'INVALID_QUERY', 'the body must be an array of one item: [{...}]', '');
  return value;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object';
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const messages = parsed.error.issues.map((i) => {
    const where = i.path.filter((p) => typeof p !== 'number').join('.');
    return where ? `"${where}" ${i.message}` : i.message;
  });
  // A problem with the query text leads: that is what INVALID_QUERY is about.
  const first = messages.find((m) => m.startsWith('"query"')) ?? messages[0] ?? 'invalid request body';
  throw dlError(400, 'INVALID_QUERY', first, messages.join('; '));
}

function money(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}

function base36(r: ReturnType<typeof serpRng>, n: number): string {
  const digits = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < n; i++) out += digits[r.int(0, digits.length - 1)];
  return out;
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

async function* iterate(chunks: Iterable<Buffer>): AsyncGenerator<Uint8Array> {
  yield* chunks;
}
