/**
 * Marketplace dataset endpoints: the catalogue, metadata, filter jobs and snapshot status / parts / downloads.
 *
 * Status codes and bodies follow docs/service.md §1–§3 where it knows them, and the real service's observed
 * behaviour by default (datasets/behaviour.ts has the switches back to the convenient readings):
 * - `GET /datasets/{id}/metadata` → the fields, for a minority of datasets only (catalogue `metadata: true`); the
 *   others, like an unknown id, → 404 `{"error": "dataset does not exist"}`: a 404 there proves nothing.
 * - `POST /datasets/filter` → 200 `{snapshot_id}` once a job started (counted as paid); 400 `{validation_errors}`
 *   for the request's shape, 400 `{error}` starting with the spec's `Field not found` / `File not found` /
 *   `Invalid file format`; 404 `{"error": "dataset does not exist"}`; 422 `{"error": "Provided filter did not match
 *   any records"}` when that is known up front (datasets/no-match.ts); 429 when 100 jobs already run on the dataset.
 * - `GET /datasets/snapshots/{id}` → metadata (also once expired: the record of the job stays); unknown → 404 text
 *   `snapshot not found`.
 * - `/parts` → `{parts}`; 400 text `Snapshot is not ready` while scheduled or building (and, under the `not_ready`
 *   fault, once after ready); 400 text `Snapshot is expired` after retention; 404 text.
 * - `/download` → the records (generated while sent). Not ready in both documented forms: 400 `{"error": "Snapshot
 *   not ready"}` while scheduled, 202 text while building; under the `not_ready` fault, after ready, alternately 202
 *   (with a Retry-After) and 400. 400 `{"error": "Snapshot is expired"}` after retention; 404 `{"error": "Snapshot not
 *   found"}`; a failed or canceled snapshot → 400 `{error}` with its reason; a `part` past the last → 400
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
import { datasetBehaviour } from '../datasets/behaviour.js';
import { NO_MATCH_ERROR, knownToMatchNothing } from '../datasets/no-match.js';
import { CONTENT_TYPES, bodyStream, renderRecords } from '../datasets/render.js';
import { HttpError, type Router } from '../router.js';

/** The service's cap on filter jobs running at once on one dataset (docs/service.md §2.3). */
export const MAX_RUNNING_JOBS = 100;

const NOT_READY_TEXT = 'Snapshot is building. Try again in a few minutes';
const EXPIRED = 'Snapshot is expired';

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
    const now = ctx.clock.now();
    const meta = job.meta(now);
    if (meta.status === 'scheduled' || meta.status === 'building') throw new HttpError(400, 'Snapshot is not ready');
    if (job.expired(now)) throw new HttpError(400, EXPIRED);
    if (meta.status === 'failed' || meta.status === 'canceled') throw failedError(meta);
    if (req.fault?.kind === 'not_ready') {
      // As a download can, after the status said ready (docs/service.md §1.3).
      ctx.stats.countFault('not_ready');
      throw new HttpError(400, 'Snapshot is not ready');
    }
    res.json(200, { parts: partCount(job.indices.length, q.batchSize) });
  });

  router.get('/datasets/snapshots/:id/download', async (req, res) => {
    const q = parseDownloadQuery(req.query, 'jsonl');
    const job = jobs.get(req.params.id ?? '');
    if (!job) throw new HttpError(404, { error: 'Snapshot not found' });
    const now = ctx.clock.now();
    const meta = job.meta(now);
    // Both documented forms of "not ready" (docs/service.md §1.2); which one when is not documented.
    if (meta.status === 'scheduled') throw new HttpError(400, { error: 'Snapshot not ready' });
    if (meta.status === 'building') return res.text(202, NOT_READY_TEXT);
    if (job.expired(now)) throw new HttpError(400, { error: EXPIRED });
    if (meta.status === 'failed' || meta.status === 'canceled') throw failedError(meta);
    if (req.fault?.kind === 'not_ready') {
      // The live service was seen answering "not ready" once more after its status said ready (docs/service.md
      // §1.2): in turns 202 with a Retry-After and 400 without one, so a client meets both.
      ctx.stats.countFault('not_ready');
      if ((ctx.stats.faults.not_ready ?? 0) % 2 === 0) throw new HttpError(400, { error: 'Snapshot not ready' });
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
    // Most datasets have no metadata, and say so as an unknown one does (docs/service.md §3.2).
    if (!def || (def.metadata !== true && datasetBehaviour(ctx.options.datasets).metadata === 'some'))
      throw new HttpError(404, { error: 'dataset does not exist' });
    res.json(200, { id: def.id, fields: metadataFields(def.fields) });
  });

  router.post('/datasets/filter', async (req, res) => {
    const r = await readFilterRequest(req);
    const def = findDataset(r.datasetId);
    if (!def) throw new HttpError(404, { error: 'dataset does not exist' });
    const predicate = compileFilter(r.filter, def, r.files);
    if (datasetBehaviour(ctx.options.datasets).noMatch === 'reject' && (await knownToMatchNothing(ctx, def, predicate)))
      throw new HttpError(422, { error: NO_MATCH_ERROR });
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

function failedError(meta: {
  id: string;
  status: string;
  error?: string;
  error_code?: string;
  failure_reason?: string;
  warning?: string;
}): HttpError {
  const why = meta.error ?? meta.failure_reason ?? meta.warning ?? `the filter job ${meta.status}`;
  const code = meta.error_code ?? (meta.warning ? 'no_records_found' : undefined);
  return new HttpError(400, {
    error: `Snapshot ${meta.id} failed: ${why}${code ? ` (${code})` : ''}; it has no records to download`,
  });
}
