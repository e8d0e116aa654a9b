/**
 * Stage 4, run unit: one unit, tried again while its failure is transient (core/retry.ts decides, from the error's
 * type). A unit that failed half-way committed nothing, so reading it again from the start loses and duplicates
 * nothing. Retrying a unit is a retry too: it follows the pipeline's retry timing and honours Retry-After.
 *
 * Each attempt reads through its own view of the source, with its own `UnitCommit` that hands the sinks the
 * unit's cursor checkpoint (engine/cursor.ts), so the checkpoint the sinks commit is the one of the rows they commit.
 *
 * Each attempt has a signal of its own, handed to the source (and through it to the HTTP body and the decoder):
 * it aborts when the attempt has run for `limits.unit_timeout_s` (a body that drips forever), or when an
 * interrupt's grace is spent (`cancel`). Nothing of an aborted attempt is committed.
 */
import { DecodeError, SluiceError } from '../../core/errors.js';
import { LIMIT_OPTIONS, LimitExceeded, formatSeconds } from '../../core/limits.js';
import { retrying, type RetryPolicy } from '../../core/retry.js';
import type { Counters, Logger, Sink, Source, WorkUnit } from '../../core/types.js';
import { checkpointedRead, type CheckpointedRead } from '../cursor.js';
import { errorText } from '../error-text.js';

/**
 * Tries per unit, the first included. One budget per cause, not a product of levels: a request the client retried
 * to the end of its own policy is not asked again by a new attempt (core/retry.ts `markRetriesSpent`), so a unit's
 * attempts are for what no level below retried: bytes cut short or corrupt, a sink's transient failure, a request
 * the client was told not to retry (`service.retry.retries: 0`).
 */
export const UNIT_ATTEMPTS = 4;

export interface RunUnitOptions {
  retry: RetryPolicy;
  log: Logger;
  counters: Counters;
  /** An aborted run tries nothing again. */
  signal: AbortSignal;
  /** Aborted when units in flight must stop at once (an interrupt's grace is spent): cancels the attempt's reads. */
  cancel?: AbortSignal;
  /** Wall-clock limit of one attempt in ms (`limits.unit_timeout_s`); none when absent. */
  timeoutMs?: number;
  /** The pipeline's source. */
  source: Source;
  /**
   * One attempt: read the unit from `read.source` (this attempt's view of the pipeline's source) and commit it into
   * `sinks` with `read.commit` (stages/load-unit.ts). `signal` is the attempt's own: the source reads under it.
   */
  attempt(
    unit: WorkUnit,
    sinkUnit: WorkUnit,
    sinks: Sink[],
    read: CheckpointedRead,
    signal: AbortSignal,
  ): Promise<void>;
}

export async function runUnit(u: WorkUnit, sinkUnit: WorkUnit, sinks: Sink[], opts: RunUnitOptions): Promise<void> {
  await retrying(
    async () => {
      const limit = attemptLimit(u, opts);
      try {
        await opts.attempt(u, sinkUnit, sinks, checkpointedRead(opts.source, u), limit.signal);
      } catch (thrown) {
        // Out of time, whatever the read made of its abort (a transport error, a sink's rollback).
        throw limit.expired() ?? thrown;
      } finally {
        limit.clear();
      }
    },
    {
      policy: opts.retry,
      signal: opts.signal,
      next: (attempt, err) => {
        if (!opts.signal.aborted && opts.retry.shouldRetry(attempt, err)) return opts.retry.delayMs(attempt, err);
        if (attempt >= opts.retry.attempts && err instanceof DecodeError) throw cutShortEveryTime(err, attempt);
        return undefined;
      },
      onRetry: (attempt, err, delay) => {
        opts.counters.retries++;
        // Decode errors already start with the unit id: say it once.
        const why = errorText(err).replace(`${u.id}: `, '');
        opts.log.warn(`unit ${u.id}: ${why}; reading it again in ${Math.round(delay)} ms`, { attempt });
      },
    },
  );
}

/** The signal one attempt reads under: the run's `cancel`, and the attempt's own deadline. */
function attemptLimit(
  u: WorkUnit,
  opts: RunUnitOptions,
): { signal: AbortSignal; expired(): LimitExceeded | undefined; clear(): void } {
  const own = new AbortController();
  let expired: LimitExceeded | undefined;
  const ms = opts.timeoutMs;
  const timer =
    ms === undefined
      ? undefined
      : setTimeout(() => {
          expired = new LimitExceeded(
            'unitTimeoutMs',
            `${u.id}: not read and committed within ${formatSeconds(ms)} (${LIMIT_OPTIONS.unitTimeoutMs}); its reads were cancelled and nothing of it was committed`,
            {
              hint:
                'the service sent the unit too slowly (a body that trickles never pauses long enough for the body ' +
                `timeout): run again later; on a slow link with large parts, raise ${LIMIT_OPTIONS.unitTimeoutMs}`,
            },
          );
          own.abort(expired);
        }, ms);
  // Forwarded by hand rather than with AbortSignal.any: the listener is removed when the attempt ends, so a run of
  // many units leaves nothing behind on the run's signal.
  const cancel = opts.cancel;
  const forward = (): void => own.abort(cancel!.reason);
  if (cancel?.aborted) forward();
  else cancel?.addEventListener('abort', forward, { once: true });
  return {
    signal: own.signal,
    expired: () => expired,
    clear: () => {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', forward);
      // Whatever of the attempt is still open (a body its reader left unreleased) ends with it.
      if (!own.signal.aborted) own.abort(new SluiceError(`${u.id}: the attempt is over`));
    },
  };
}

/** A unit whose bytes came short or corrupt on every attempt: no point telling the user to "rerun to download". */
function cutShortEveryTime(err: DecodeError, attempts: number): SluiceError {
  return new SluiceError(err.message, {
    hint:
      `the unit was read ${attempts} times and its bytes were cut short or corrupt every time: the service or the ` +
      'network keeps failing on it; run the same command again later (committed units are kept and skipped)',
    cause: err,
  });
}
