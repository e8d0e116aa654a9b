/** Marketplace datasets: list, metadata, filter jobs (paid), snapshot status, parts and streamed downloads. */
import { FormData } from 'undici';
import type {
  DatasetsApi,
  Download,
  DownloadParams,
  DownloadWait,
  FilterRequest,
  SnapshotList,
  SnapshotListItem,
  SnapshotMeta,
} from './api.js';
import { RetryPolicy } from '../core/retry.js';
import { sleep } from '../core/sleep.js';
import { NotReadyError, ServiceError } from './errors.js';
import { parseRetryAfter, readText, type HttpCore } from './http.js';

/**
 * Waits between downloads answered 202: the service's Retry-After when it gives one, else a backoff from 1 s up to
 * 30 s. How many is bounded by the caller's wait budget (the source's poll timeout), not by a count.
 */
const NOT_READY_POLICY = new RetryPolicy({ attempts: Number.MAX_SAFE_INTEGER, baseMs: 1_000, maxMs: 30_000 });

export function datasetsApi(http: HttpCore): DatasetsApi {
  const snapshotPath = (id: string): string => `/datasets/snapshots/${encodeURIComponent(id)}`;
  return {
    list: () => http.json({ method: 'GET', path: '/datasets/list' }),

    metadata: (datasetId) => http.json({ method: 'GET', path: `/datasets/${encodeURIComponent(datasetId)}/metadata` }),

    async filter(req: FilterRequest) {
      if (!req.files?.length) {
        // JSON mode (docs/service.md §2.1): everything in the body.
        return http.json({
          method: 'POST',
          path: '/datasets/filter',
          paid: true,
          json: {
            dataset_id: req.dataset_id,
            filter: req.filter,
            ...(req.records_limit !== undefined && { records_limit: req.records_limit }),
          },
        });
      }
      // Multipart mode: dataset_id and records_limit move to the query string; filter values name the files.
      const form = new FormData();
      form.set('filter', JSON.stringify(req.filter));
      for (const f of req.files) {
        const type = f.contentType ?? (f.name.toLowerCase().endsWith('.json') ? 'application/json' : 'text/csv');
        form.append('files[]', new Blob([f.content], { type }), f.name);
      }
      return http.json({
        method: 'POST',
        path: '/datasets/filter',
        paid: true,
        query: { dataset_id: req.dataset_id, records_limit: req.records_limit },
        form,
      });
    },

    snapshot: (id) => http.json<SnapshotMeta>({ method: 'GET', path: snapshotPath(id) }),

    snapshots(datasetId: string): Promise<SnapshotList> {
      const call = { method: 'GET' as const, path: '/datasets/snapshots', query: { dataset_id: datasetId } };
      // Not `http.json`: the Date header comes with the list, so callers can compare `created` on one clock.
      return http.call(call, async (res) => {
        const text = await readText(res.body, Infinity);
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const items = Array.isArray(parsed) ? parsed : undefined;
        if (!items || !items.every(isListItem))
          throw new ServiceError({
            method: call.method,
            path: call.path,
            status: 502,
            serviceMessage: `expected an array of snapshots, got: ${text.slice(0, 200) || 'an empty answer'}`,
          });
        const date = res.headers.date;
        const serviceTime = new Date(Array.isArray(date) ? (date[0] ?? '') : (date ?? ''));
        return {
          snapshots: items.filter((s) => s.dataset_id === undefined || s.dataset_id === datasetId),
          ...(!Number.isNaN(serviceTime.getTime()) && { serviceTime }),
        };
      });
    },

    parts: (id, p) =>
      http.json({
        method: 'GET',
        path: `${snapshotPath(id)}/parts`,
        query: { format: p.format, compress: p.compress, batch_size: p.batch_size },
      }),

    async download(id: string, p: DownloadParams, wait: DownloadWait = {}): Promise<Download> {
      const path = `${snapshotPath(id)}/download`;
      const budgetMs = wait.notReadyWaitMs ?? 0;
      const deadline = Date.now() + budgetMs;
      for (let attempt = 1; ; attempt++) {
        const res = await http.send({
          method: 'GET',
          path,
          query: { format: p.format, compress: p.compress, batch_size: p.batch_size, part: p.part },
          accept: [202],
          ...(wait.signal !== undefined && { signal: wait.signal }),
        });
        if (res.status !== 202) return res;
        // 202 even after the status said ready (docs/service.md §1.2): wait and ask again while the budget lasts.
        const text = (await res.body.toArray()).join('').trim() || 'Snapshot is building';
        const retryAfter = res.headers['retry-after'];
        const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
        const init = { method: 'GET', path, serviceMessage: text, ...(retryAfterMs !== undefined && { retryAfterMs }) };
        const notReady = new NotReadyError(init);
        const delayMs = NOT_READY_POLICY.delayMs(attempt, notReady);
        if (!NOT_READY_POLICY.shouldRetry(attempt, notReady) || Date.now() + delayMs > deadline)
          throw new NotReadyError({
            ...init,
            final: true,
            ...(budgetMs > 0 && {
              serviceMessage: `${text} (still, after ${Math.round(budgetMs / 1000)} s of waiting)`,
            }),
          });
        wait.onNotReady?.({ attempt, delayMs, message: text });
        await sleep(delayMs, wait.signal);
      }
    },
  };
}

function isListItem(v: unknown): v is SnapshotListItem {
  return typeof v === 'object' && v !== null && typeof (v as { id?: unknown }).id === 'string';
}
