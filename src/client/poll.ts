/**
 * Waiting for a snapshot: poll while `scheduled` or `building` (official clients do the same), back off gently,
 * and give up with the snapshot id in the message, so the run can be resumed without starting a second paid job.
 */
import { SluiceError } from '../core/errors.js';
import type { ServiceClient, SnapshotMeta } from './api.js';
import { notYet, pollPolicy, pollUntil } from '../core/retry.js';

export interface PollOptions {
  /** First wait between status checks; grows ×1.5 (with jitter: core/retry.ts `pollPolicy`) up to `maxIntervalMs`. */
  intervalMs: number;
  maxIntervalMs?: number;
  timeoutMs: number;
  signal?: AbortSignal;
  onStatus?: (meta: SnapshotMeta) => void;
}

/** Statuses after which the snapshot will not change: waiting longer is pointless. */
const TERMINAL = new Set(['ready', 'failed', 'canceled', 'cancelled']);

/**
 * Resolves with the final metadata: `ready`, or `failed` with `warning_code: no_records_found` (an empty result,
 * not an error). Any other failure, and `canceled`, throws at once, with the service's reason. Every other status
 * (the list endpoint's vocabulary is wide: `collecting`, `digesting`, …) is a job still running.
 */
export async function pollSnapshot(client: ServiceClient, id: string, opts: PollOptions): Promise<SnapshotMeta> {
  let last: string | undefined;
  return pollUntil(
    async () => {
      const meta = await client.datasets.snapshot(id);
      if (meta.status !== last) opts.onStatus?.(meta);
      last = meta.status;
      if (meta.status === 'ready') return meta;
      if (!TERMINAL.has(meta.status)) return notYet();
      if (meta.status === 'failed' && meta.warning_code === 'no_records_found') return meta;
      throw snapshotFailed(id, meta);
    },
    {
      policy: pollPolicy(opts.intervalMs, opts.maxIntervalMs ?? 10_000),
      timeoutMs: opts.timeoutMs,
      timedOut: () =>
        new SluiceError(`snapshot ${id} is still ${last} after ${seconds(opts.timeoutMs)} s of waiting`, {
          hint: `run the same command again later: the run resumes with snapshot ${id} and starts no new filter job (or raise source.poll.timeout_s)`,
        }),
      ...(opts.signal !== undefined && { signal: opts.signal }),
    },
  );
}

/**
 * Why a snapshot failed, from whichever field the service put it in (the vendor's CLI reads the same five); the
 * status alone when none says.
 */
export function failureReason(meta: SnapshotMeta): string | undefined {
  for (const why of [meta.error, meta.error_message, meta.failure_reason, meta.warning, meta.message])
    if (typeof why === 'string' && why.trim() !== '') return why.trim();
  return undefined;
}

function snapshotFailed(id: string, meta: SnapshotMeta): SluiceError {
  const why = failureReason(meta);
  const code = meta.error_code ?? meta.warning_code;
  const canceled = meta.status !== 'failed';
  const limit = canceled || code === 'job_timeout' || /5[- ]minute|time ?limit|timed? ?out/i.test(why ?? '');
  return new SluiceError(
    `snapshot ${id} ${canceled ? 'was canceled' : 'failed'}: ${why ?? `the service gave no reason (status ${meta.status})`}${code ? ` (${code})` : ''}`,
    {
      hint: limit
        ? 'the service cancels a filter job that runs longer than 5 minutes: narrow source.filter or lower source.records_limit (a changed filter or limit starts a new job on the next run), or run with --fresh to try the same job again'
        : 'fix source.filter (a changed filter starts a new job on the next run), or run with --fresh to start the same filter job again',
    },
  );
}

/** Whole seconds, or tenths below ten (a 0.3 s timeout is not "0 s"). */
function seconds(ms: number): number {
  return ms >= 10_000 ? Math.round(ms / 1000) : Math.round(ms / 100) / 10;
}
