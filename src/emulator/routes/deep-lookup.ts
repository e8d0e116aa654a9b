/**
 * Deep lookup under `/datasets/deep_lookup/v1` (docs/service.md §4): preview → trigger (paid) → status → data → download,
 * enrich (paid) and cancel, plus `enhance_query`. Data comes from data/deep-lookup.ts, states from the emulated
 * clock (data/deep-lookup-lifecycle.ts), file layouts from data/deep-lookup-export.ts; what bodies may hold and how
 * a refusal reads from deep-lookup-body.ts, what a request holds and costs from deep-lookup-requests.ts.
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
import type { EmulatorContext } from '../context.js';
import type { HttpError, Router } from '../router.js';
import { PREVIEW_ROWS, defaultColumns, lookupRow, queryPlan, type LookupColumn } from '../data/deep-lookup.js';
import { csvExport, jsonExport } from '../data/deep-lookup-export.js';
import { enrichmentCompleted, jobView, previewStatus, type JobView } from '../data/deep-lookup-lifecycle.js';
import { serpRng } from '../data/serp-rng.js';
import {
  bodyJson,
  dlError,
  enrichItem,
  fromPreview,
  fromQuery,
  isObject,
  notFound,
  oneItem,
  parse,
  previewItem,
} from './deep-lookup-body.js';
import {
  BALANCE_CENTS,
  CENTS_PER_ENRICHED_RECORD,
  CENTS_PER_RECORD,
  allColumns,
  costCents,
  money,
  rowsOf,
  savedDeepLookupSchema,
  type LookupRequest,
  type Preview,
} from './deep-lookup-requests.js';

const BASE = '/datasets/deep_lookup/v1';
const DEFAULT_RESULT_LIMIT = 100;

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
