/**
 * Waiting for a snapshot: poll while `scheduled` or `building` (official clients do the same), back off gently,
 * and give up with the snapshot id in the message, so the run can be resumed without starting a second paid job.
 */
import { SluiceError } from '../core/errors.js';
import type { ServiceClient, SnapshotMeta } from './api.js';
import { sleep } from '../core/sleep.js';

export interface PollOptions {
  /** First wait between status checks; grows ×1.5 up to `maxIntervalMs`. */
  intervalMs: number;
  maxIntervalMs?: number;
  timeoutMs: number;
  signal?: AbortSignal;
  onStatus?: (meta: SnapshotMeta) => void;
}

/**
 * Resolves with the final metadata: `ready`, or `failed` with `warning_code: no_records_found` (an empty result,
 * not an error). Any other failure throws.
 */
export async function pollSnapshot(client: ServiceClient, id: string, opts: PollOptions): Promise<SnapshotMeta> {
  const deadline = Date.now() + opts.timeoutMs;
  let interval = opts.intervalMs;
  let last: string | undefined;
  for (;;) {
    const meta = await client.datasets.snapshot(id);
    if (meta.status !== last) opts.onStatus?.(meta);
    last = meta.status;
    if (meta.status === 'ready') return meta;
    if (meta.status === 'failed') {
      if (meta.warning_code === 'no_records_found') return meta;
      const why = meta.error ?? (meta as { error_message?: string }).error_message ?? meta.warning ?? 'no reason given';
      throw new SluiceError(`snapshot ${id} failed: ${why}${meta.error_code ? ` (${meta.error_code})` : ''}`, {
        hint:
          meta.error_code === 'job_timeout'
            ? "the filter job passed the service's 5-minute limit: narrow the filter or lower records_limit, then run with --fresh"
            : 'fix the filter and run with --fresh to start a new filter job',
      });
    }
    if (Date.now() + interval > deadline)
      throw new SluiceError(`snapshot ${id} is still ${meta.status} after ${seconds(opts.timeoutMs)} s of waiting`, {
        hint: `run the same command again later: the run resumes with snapshot ${id} and starts no new filter job (or raise source.poll.timeout_s)`,
      });
    await sleep(interval, opts.signal);
    interval = Math.min(interval * 1.5, opts.maxIntervalMs ?? 10_000);
  }
}

/** Whole seconds, or tenths below ten (a 0.3 s timeout is not "0 s"). */
function seconds(ms: number): number {
  return ms >= 10_000 ? Math.round(ms / 1000) : Math.round(ms / 100) / 10;
}
