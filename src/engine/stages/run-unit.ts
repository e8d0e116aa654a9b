/**
 * Stage 4, run unit: one unit, tried again while its failure is transient (core/retry.ts decides, from the error's
 * type). A unit that failed half-way committed nothing, so reading it again from the start loses and duplicates
 * nothing. Retrying a unit is a retry too: it follows the pipeline's retry timing and honours Retry-After.
 *
 * Each attempt reads through its own view of the source, with its own `UnitCommit` that hands the sinks the
 * unit's cursor checkpoint (engine/cursor.ts), so the checkpoint the sinks commit is the one of the rows they commit.
 */
import { DecodeError, SluiceError } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { sleep } from '../../core/sleep.js';
import type { Counters, Logger, Sink, Source, WorkUnit } from '../../core/types.js';
import { checkpointedRead, type CheckpointedRead } from '../cursor.js';
import { errorText } from '../error-text.js';

/** Tries per unit, the first included (the client already retried each request). */
export const UNIT_ATTEMPTS = 4;

export interface RunUnitOptions {
  retry: RetryPolicy;
  log: Logger;
  counters: Counters;
  /** An aborted run tries nothing again. */
  signal: AbortSignal;
  /** The pipeline's source. */
  source: Source;
  /**
   * One attempt: read the unit from `read.source` (this attempt's view of the pipeline's source) and commit it into
   * `sinks` with `read.commit` (stages/load-unit.ts).
   */
  attempt(unit: WorkUnit, sinkUnit: WorkUnit, sinks: Sink[], read: CheckpointedRead): Promise<void>;
}

export async function runUnit(u: WorkUnit, sinkUnit: WorkUnit, sinks: Sink[], opts: RunUnitOptions): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await opts.attempt(u, sinkUnit, sinks, checkpointedRead(opts.source, u));
      return;
    } catch (err) {
      if (opts.signal.aborted || !opts.retry.shouldRetry(attempt, err)) {
        if (attempt >= opts.retry.attempts && err instanceof DecodeError) throw cutShortEveryTime(err, attempt);
        throw err;
      }
      opts.counters.retries++;
      const delay = opts.retry.delayMs(attempt, err);
      // Decode errors already start with the unit id: say it once.
      const why = errorText(err).replace(`${u.id}: `, '');
      opts.log.warn(`unit ${u.id}: ${why}; reading it again in ${Math.round(delay)} ms`, { attempt });
      await sleep(delay, opts.signal);
    }
  }
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
