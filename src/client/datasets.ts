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
import { RetryPolicy, notYet, pollUntil } from '../core/retry.js';
import { NotReadyError, ServiceError } from './errors.js';
import { readBounded } from './answers.js';
import { parseRetryAfter } from './error-answers.js';
import type { HttpCore } from './http.js';

/** Waits between "not ready" answers: no bound on their number (the caller's wait budget bounds them), 30 s at most. */
const NOT_READY_MAX_MS = 30_000;

/** A "not ready" answer: what the service said, and the wait it asked for. */
interface NotReadyAnswer {
  notReady: string;
  status: number;
  retryAfterMs?: number;
}

/**
 * The service's 400 forms of "not ready" (docs/service.md §1.2–1.3): `{"error": "Snapshot not ready"}` on a
 * download, `Snapshot is not ready` on parts. A 400 is otherwise final (a validation error), so only the words tell.
 */
export function isNotReadyRefusal(err: unknown): err is ServiceError {
  return err instanceof ServiceError && err.status === 400 && /\bnot ready\b|\bis building\b/i.test(err.serviceMessage);
}

/** The most of a 202 "still building" body that is read. */
const NOT_READY_BODY = 4096;

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
          bills: 'filter',
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
        bills: 'filter',
        query: { dataset_id: req.dataset_id, records_limit: req.records_limit },
        form,
      });
    },

    snapshot: (id) => http.json<SnapshotMeta>({ method: 'GET', path: snapshotPath(id) }),

    snapshots(datasetId: string): Promise<SnapshotList> {
      const call = { method: 'GET' as const, path: '/datasets/snapshots', query: { dataset_id: datasetId } };
      // Not `http.json`: the Date header comes with the list, so callers can compare `created` on one clock.
      return http.call(call, async (res) => {
        const text = await http.answerText(call, res);
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

    parts: (id, p, wait = {}) =>
      untilReady(`${snapshotPath(id)}/parts`, wait, () =>
        http
          .json<{ parts: number }>({
            method: 'GET',
            path: `${snapshotPath(id)}/parts`,
            query: { format: p.format, compress: p.compress, batch_size: p.batch_size },
          })
          .catch((err: unknown) => notReadyOf(err)),
      ),

    download: (id: string, p: DownloadParams, wait: DownloadWait = {}): Promise<Download> =>
      untilReady(`${snapshotPath(id)}/download`, wait, async () => {
        const path = `${snapshotPath(id)}/download`;
        let res: Download;
        try {
          res = await http.send({
            method: 'GET',
            path,
            query: { format: p.format, compress: p.compress, batch_size: p.batch_size, part: p.part },
            accept: [202],
            ...(wait.signal !== undefined && { signal: wait.signal }),
          });
        } catch (err) {
          return notReadyOf(err);
        }
        if (res.status !== 202) return res;
        // 202 even after the status said ready (docs/service.md §1.2): wait and ask again while the budget lasts.
        // A message, not data: its first bytes are enough, and an endless one is not read on.
        const text = (await readBounded(res.body, NOT_READY_BODY)).trim() || 'Snapshot is building';
        const retryAfter = res.headers['retry-after'];
        const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
        return { notReady: text, status: 202, ...(retryAfterMs !== undefined && { retryAfterMs }) };
      }),
  };
}

/** A 400 "not ready" as an answer to wait out; any other error is thrown. */
function notReadyOf(err: unknown): NotReadyAnswer {
  if (!isNotReadyRefusal(err)) throw err;
  return {
    notReady: err.serviceMessage,
    status: 400,
    ...(err.retryAfterMs !== undefined && { retryAfterMs: err.retryAfterMs }),
  };
}

/**
 * Asks until the answer is not "not ready": the file behind a snapshot may be prepared after its status said ready
 * (docs/service.md §1.2), so this is a wait, not a failure, for as long as `wait.notReadyWaitMs` allows. Waits the
 * service's Retry-After when it gives one, else a backoff from `wait.intervalMs` (1 s) up to 30 s.
 */
async function untilReady<T extends object>(
  path: string,
  wait: DownloadWait,
  ask: () => Promise<T | NotReadyAnswer>,
): Promise<T> {
  const budgetMs = wait.notReadyWaitMs ?? 0;
  let last: NotReadyAnswer | undefined;
  const init = (a: NotReadyAnswer) => ({ method: 'GET', path, status: a.status, serviceMessage: a.notReady });
  return pollUntil(
    async () => {
      const answer = await ask();
      if (!('notReady' in answer)) return answer;
      last = answer;
      return notYet(answer.retryAfterMs);
    },
    {
      policy: new RetryPolicy({
        attempts: Number.MAX_SAFE_INTEGER,
        baseMs: wait.intervalMs ?? 1_000,
        maxMs: NOT_READY_MAX_MS,
      }),
      timeoutMs: budgetMs,
      timedOut: () =>
        new NotReadyError({
          ...init(last!),
          ...(last!.retryAfterMs !== undefined && { retryAfterMs: last!.retryAfterMs }),
          final: true,
          ...(budgetMs > 0 && {
            serviceMessage: `${last!.notReady} (still, after ${Math.round(budgetMs / 1000)} s of waiting)`,
          }),
        }),
      onWait: (attempt, delayMs) => wait.onNotReady?.({ attempt, delayMs, message: last!.notReady }),
      ...(wait.signal !== undefined && { signal: wait.signal }),
    },
  );
}

function isListItem(v: unknown): v is SnapshotListItem {
  return typeof v === 'object' && v !== null && typeof (v as { id?: unknown }).id === 'string';
}
