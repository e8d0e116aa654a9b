/**
 * Marketplace dataset endpoints: the catalogue, metadata, filter jobs and snapshot status / parts / downloads.
 *
 * Status codes and bodies follow docs/service.md §1–§3 where it knows them:
 * - `GET /datasets/{id}/metadata`, unknown id → 404 `{"error": "dataset does not exist"}`.
 * - `POST /datasets/filter` → 200 `{snapshot_id}` once a job started (counted as paid); 400 `{validation_errors}`
 *   for the request's shape, 400 `{error}` starting with the spec's `Field not found` / `File not found` /
 *   `Invalid file format`; 404 `{"error": "dataset does not exist"}`; 429 when 100 jobs already run on the dataset.
 * - `GET /datasets/snapshots/{id}` → metadata; unknown → 404 text `snapshot not found`.
 * - `/parts` → `{parts}`; 400 text `Snapshot is not ready` while scheduled or building; 404 text.
 * - `/download` → the records (generated while sent); 202 text while not ready (and, under the `not_ready` fault,
 *   once more after ready, with a Retry-After); 404 `{"error": "Snapshot not
 *   found"}`; a failed snapshot → 400 `{error}` with its reason; a `part` past the last → 400
 *   `{validation_errors: ['"part" must be less than or equal to <parts>']}` rather than an empty body, so a
 *   client with a wrong `batch_size` hears about it.
 * Query validation comes first, then the id, then the snapshot's state.
 */
import type { EmulatorContext } from '../context.js';
import { DATASETS, findDataset, recordsAt } from '../data/datasets-catalogue.js';
import { metadataFields } from '../data/dataset-fields.js';
import { parseDownloadQuery, partCount } from '../datasets/download-params.js';
import { compileFilter } from '../datasets/filter-compile.js';
import { readFilterRequest } from '../datasets/filter-request.js';
import { SnapshotJobs, type SnapshotJob } from '../datasets/jobs.js';
import { persistSnapshotJobs } from '../datasets/saved-jobs.js';
import { CONTENT_TYPES, bodyStream, renderRecords } from '../datasets/render.js';
import { HttpError, type Router } from '../router.js';

/** The service's cap on filter jobs running at once on one dataset (docs/service.md §2.3). */
export const MAX_RUNNING_JOBS = 100;

const NOT_READY_TEXT = 'Snapshot is building. Try again in a few minutes';

export function register(router: Router, ctx: EmulatorContext): void {
  const jobs = new SnapshotJobs(ctx);
  persistSnapshotJobs(jobs, ctx);

  router.get('/datasets/list', (_req, res) => {
    res.json(
      200,
      DATASETS.map((d) => ({ id: d.id, name: d.name, size: ctx.options.size })),
    );
  });

  // Snapshot routes before `/datasets/:id/metadata`, whose pattern would also match `/datasets/snapshots/metadata`.
  router.get('/datasets/snapshots', (req, res) => {
    const datasetId = req.query.get('dataset_id');
    const status = req.query.get('status');
    const now = ctx.clock.now();
    const list = jobs
      .all()
      .map((j) => j.meta(now))
      .filter((m) => (datasetId === null || m.dataset_id === datasetId) && (status === null || m.status === status))
      .map((m) => ({
        id: m.id,
        created: m.created,
        status: m.status,
        dataset_id: m.dataset_id,
        ...(m.dataset_size !== undefined && { dataset_size: m.dataset_size }),
      }));
    res.json(200, list);
  });

  router.get('/datasets/snapshots/:id', (req, res) => {
    const job = jobs.get(req.params.id ?? '');
    if (!job) throw new HttpError(404, 'snapshot not found');
    res.json(200, job.meta(ctx.clock.now()));
  });

  router.get('/datasets/snapshots/:id/parts', (req, res) => {
    const q = parseDownloadQuery(req.query, 'json');
    const job = jobs.get(req.params.id ?? '');
    if (!job) throw new HttpError(404, 'snapshot not found');
    const meta = job.meta(ctx.clock.now());
    if (meta.status === 'scheduled' || meta.status === 'building') throw new HttpError(400, 'Snapshot is not ready');
    if (meta.status === 'failed') throw failedError(meta);
    res.json(200, { parts: partCount(job.indices.length, q.batchSize) });
  });

  router.get('/datasets/snapshots/:id/download', async (req, res) => {
    const q = parseDownloadQuery(req.query, 'jsonl');
    const job = jobs.get(req.params.id ?? '');
    if (!job) throw new HttpError(404, { error: 'Snapshot not found' });
    const meta = job.meta(ctx.clock.now());
    if (meta.status === 'scheduled' || meta.status === 'building') return res.text(202, NOT_READY_TEXT);
    if (meta.status === 'failed') throw failedError(meta);
    if (req.fault?.kind === 'not_ready') {
      // The live service was seen answering 202 once more after its status said ready (docs/service.md §1.2).
      ctx.stats.countFault('not_ready');
      return res.text(202, NOT_READY_TEXT, { 'retry-after': String(req.fault.retryAfterS) });
    }

    const total = job.indices.length;
    const parts = partCount(total, q.batchSize);
    const part = q.part ?? 1;
    if (part > parts)
      throw new HttpError(400, {
        validation_errors: [
          `"part" must be less than or equal to ${parts} (${total} records in parts of ${q.batchSize ?? total})`,
        ],
      });
    const from = q.batchSize === undefined ? 0 : (part - 1) * q.batchSize;
    const to = q.batchSize === undefined ? total : Math.min(total, from + q.batchSize);
    const records = recordsAt(job.dataset, ctx.options.seed, job.indices, from, to);
    const chunks = renderRecords(records, q.format, Object.keys(job.dataset.fields));
    const ext = q.format === 'csv' ? 'csv' : q.format;
    const name = `${job.id}${parts > 1 ? `_part${part}` : ''}.${ext}${q.compress ? '.gz' : ''}`;
    const headers: Record<string, string> = {
      'content-type': q.compress ? 'application/gzip' : CONTENT_TYPES[q.format],
      'content-disposition': `attachment; filename="${name}"`,
    };
    await res.stream(200, headers, bodyStream(chunks, q.compress), { gzip: q.compress });
  });

  router.get('/datasets/:id/metadata', (req, res) => {
    const def = findDataset(req.params.id ?? '');
    if (!def) throw new HttpError(404, { error: 'dataset does not exist' });
    res.json(200, { id: def.id, fields: metadataFields(def.fields) });
  });

  router.post('/datasets/filter', async (req, res) => {
    const r = await readFilterRequest(req);
    const def = findDataset(r.datasetId);
    if (!def) throw new HttpError(404, { error: 'dataset does not exist' });
    const predicate = compileFilter(r.filter, def, r.files);
    if (jobs.runningOn(def.id) >= MAX_RUNNING_JOBS)
      throw new HttpError(429, { error: `Maximum limit of ${MAX_RUNNING_JOBS} jobs per dataset has been exceeded` });
    const job: SnapshotJob = jobs.start(def, predicate, {
      filter: r.rawFilter,
      files: [...r.files.values()],
      ...(r.recordsLimit !== undefined && { recordsLimit: r.recordsLimit }),
    });
    ctx.stats.countPaid('filter');
    await ctx.state.commit();
    res.json(200, { snapshot_id: job.id });
  });
}

function failedError(meta: { id: string; error?: string; error_code?: string; warning?: string }): HttpError {
  const why = meta.error ?? meta.warning ?? 'the filter job failed';
  const code = meta.error_code ?? (meta.warning ? 'no_records_found' : undefined);
  return new HttpError(400, {
    error: `Snapshot ${meta.id} failed: ${why}${code ? ` (${code})` : ''}; it has no records to download`,
  });
}
