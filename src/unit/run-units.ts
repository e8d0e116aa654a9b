/**
 * A run's units through the path: each planned unit once, `source.concurrency` at a time (scheduler.ts), into the
 * sinks that have not committed it; each unit tried again while its failure is transient.
 *
 * Sinks see run-scoped unit ids (`<run>/<unit>`), so tonight's page 1 of a query is not mistaken for last night's; a
 * resumed run keeps its id and so recognises what it committed before it stopped. A unit that failed half-way
 * committed nothing, so reading it again from the start loses and duplicates nothing. Retrying a unit is a retry too:
 * it follows the pipeline's retry timing and honours Retry-After (core/retry.ts decides, from the error's type).
 *
 * Each attempt reads under a signal of its own: it aborts when the attempt has run for `limits.unit_timeout_s` (a
 * body that drips forever), or when an interrupt's grace is spent (`cancel`). Nothing of an aborted attempt is
 * committed.
 */
import { createHash } from 'node:crypto';
import { getMaxListeners, setMaxListeners } from 'node:events';
import { failpoint } from '../core/failpoints.js';
import { DecodeError, SluiceError } from '../core/errors.js';
import { errorText } from '../core/error-text.js';
import { LIMIT_OPTIONS, LimitExceeded } from '../core/limits.js';
import { retrying, type RetryPolicy } from '../core/retry.js';
import type { Counters, Logger, Sink, Source, SourceContext, WorkUnit } from '../core/types.js';
import { scheduleUnits } from './scheduler.js';
import type { UnitLoaded, UnitPath } from './unit-path.js';
import { formatDuration } from '../core/duration.js';

/**
 * Tries per unit, the first included. One budget per cause, not a product of levels: a request the client retried
 * to the end of its own policy is not asked again by a new attempt (core/retry.ts `markRetriesSpent`), so a unit's
 * attempts are for what no level below retried: bytes cut short or corrupt, a sink's transient failure, a request
 * the client was told not to retry (`service.retry.retries: 0`).
 */
export const UNIT_ATTEMPTS = 4;

export interface Shard {
  index: number;
  count: number;
}

export interface UnitCounts {
  total: number;
  done: number;
  skipped: number;
  failed: number;
}

/** What the run is told as its units go (the progress display, the watchers, the tally). */
export interface UnitEvents {
  /** Around each unit's work, all its attempts (a trace span). */
  around?(unit: WorkUnit, work: () => Promise<void>): Promise<void>;
  counted?(units: Readonly<UnitCounts>): void;
  /** One attempt loaded the unit into every sink that needed it. */
  loaded?(unit: WorkUnit, loaded: UnitLoaded): void;
  /** Test seam: after a unit committed in every sink; a throw fails the unit there, like a crash. */
  afterCommit?(unit: WorkUnit): void | Promise<void>;
}

export interface RunUnitsOptions {
  runId: string;
  planned: readonly WorkUnit[];
  path: UnitPath;
  /** The source's concurrency, and where a unit committed earlier leads (`discover`). */
  source: Source;
  /** The source context `discover` is given. */
  context: SourceContext;
  sinks: readonly Sink[];
  shard?: Shard;
  retry: RetryPolicy;
  log: Logger;
  counters: Pick<Counters, 'retries'>;
  /** Aborted: no new unit starts, nothing is tried again (an interrupt). */
  signal: AbortSignal;
  /** Aborted when units in flight must stop at once (an interrupt's grace is spent): cancels their reads. */
  cancel?: AbortSignal;
  /** Wall-clock limit of one attempt in ms (`limits.unit_timeout_s`); none when absent (local files). */
  timeoutMs?: number;
  /** Stop starting units (the failure budget is spent): those in flight finish their commit. */
  halted?(): boolean;
  events?: UnitEvents;
}

export interface UnitsRun {
  units: UnitCounts;
  /** The first unit failure. */
  failure?: unknown;
  /** Units this run committed into each sink (same order as `sinks`), for the run history. */
  committedPerSink: number[];
}

/** The id the sinks know a unit by in this run. */
export function sinkUnit(runId: string, u: WorkUnit): WorkUnit {
  return { ...u, id: `${runId}/${u.id}` };
}

export async function runUnits(opts: RunUnitsOptions): Promise<UnitsRun> {
  const { sinks, log, events } = opts;
  const committed = await Promise.all(sinks.map((s) => s.committedUnits()));
  const pending = (u: WorkUnit): Sink[] => {
    const id = sinkUnit(opts.runId, u).id;
    return sinks.filter((_, i) => !committed[i]!.has(id));
  };
  const units: UnitCounts = { total: 0, done: 0, skipped: 0, failed: 0 };
  const committedPerSink = sinks.map(() => 0);
  const counted = (): void => events?.counted?.(units);

  // Units whose files every sink took whole, waiting to be committed together (a sink's group), while the next are
  // read: as many as the sink that takes fewest allows.
  const committing = Math.min(...sinks.map((s) => s.capabilities.native?.committing ?? 0));
  // Each unit in flight listens on the run's signals until its attempt ends: that many listeners are expected.
  const inFlight = opts.source.concurrency + committing;
  for (const signal of [opts.signal, opts.cancel])
    if (signal) setMaxListeners(Math.max(getMaxListeners(signal), inFlight + 10), signal);
  const result = await scheduleUnits(opts.planned, {
    concurrency: opts.source.concurrency,
    committing,
    ...(opts.shard && { accepts: (u: WorkUnit) => inShard(u, opts.shard!) }),
    isCommitted: (u) => pending(u).length === 0,
    run: async (u, read) => {
      const into = pending(u);
      let next: readonly WorkUnit[] = [];
      const work = async (): Promise<void> => {
        const loaded = await loadWithRetries(u, into, opts, read);
        next = loaded.next;
        events?.loaded?.(u, loaded);
      };
      await (events?.around ? events.around(u, work) : work());
      for (const s of into) committedPerSink[sinks.indexOf(s)]!++;
      await events?.afterCommit?.(u);
      failpoint('engine:after-commit');
      return next;
    },
    // A committed page still tells a crawl where the next page is (from the checkpointed state).
    discover: (u) => opts.source.discover?.(u, opts.context) ?? [],
    stopped: () => opts.signal.aborted || opts.halted?.() === true,
    onScheduled: () => {
      units.total++;
      counted();
    },
    onSkipped: () => {
      units.skipped++;
      units.done++;
      counted();
    },
    onCommitted: () => {
      units.done++;
      counted();
    },
    onFailed: (u, err) => {
      // Interrupted: its read was cut short before any sink committed it (a commit under way is let finish), so it
      // is not a failure, only left for the next run.
      if (opts.signal.aborted) {
        log.info(`unit ${u.id} abandoned: the run was interrupted`);
        return;
      }
      units.failed++;
      log.error(`unit ${u.id} failed: ${errorText(err)}`);
    },
  });
  return { units, committedPerSink, ...(result.failure !== undefined && { failure: result.failure }) };
}

/**
 * One unit, its attempts: each a load under its own deadline, again while the failure is transient. `read`: the
 * unit's reading is over (its file taken whole by every sink); an attempt after that reads outside the scheduler's
 * readers, as a retry of a request does.
 */
function loadWithRetries(
  u: WorkUnit,
  into: readonly Sink[],
  opts: RunUnitsOptions,
  read: () => void,
): Promise<UnitLoaded> {
  return retrying(
    async () => {
      const limit = attemptLimit(u, opts);
      try {
        return await opts.path.load(u, sinkUnit(opts.runId, u), into, limit.signal, read);
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
  opts: Pick<RunUnitsOptions, 'timeoutMs' | 'cancel'>,
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
            `${u.id}: not read and committed within ${formatDuration(ms)} (${LIMIT_OPTIONS.unitTimeoutMs}); its reads were cancelled and nothing of it was committed`,
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

/**
 * Every unit falls in exactly one shard, by a stable hash. Crawls put the query or fid in `shard_key`, so all pages
 * of one query land in the same shard (a page's successor is discovered by the shard that read the page).
 */
export function inShard(u: WorkUnit, shard: Shard): boolean {
  const key = typeof u.params.shard_key === 'string' ? u.params.shard_key : u.id;
  const h = createHash('sha1').update(key).digest().readUInt32BE(0);
  return h % shard.count === shard.index;
}
