/**
 * Starting a filter job exactly once when its answer can be lost.
 *
 * The filter call is paid and has no idempotency key (docs/service.md §2.4): when it fails after the request may have
 * reached the service (a 5xx, a connection lost before the answer), the client refuses to retry it blindly
 * (`AmbiguousPaidCallError`). This module resolves that ambiguity with the dataset's snapshot list (docs/service.md §1.1,
 * free): before each call it checkpoints "attempt started at T for dataset D" with the snapshots already listed for
 * D, so afterwards — in the same run, or in a rerun after a crash — a snapshot that is new since then and was
 * created while the call was in flight can only be that call's job:
 * - exactly one such snapshot → adopt it (the lost answer is recovered, nothing is paid twice);
 * - none → the job was not started: call again (a bounded number of times per run);
 * - several → something else started jobs on D meanwhile (another pipeline, a shard): the user must say which one.
 *
 * Times are compared on the service's clock when its `Date` header gives it (the list answer carries one); otherwise
 * on the local clock with a wider margin for skew.
 *
 * What it cannot tell apart: a job another client started on the same dataset while this call was in flight (between
 * the list and the failure, usually well under a second). If this call started nothing, that job would be adopted;
 * if it started one too, both are listed and the run stops. The adoption is logged as a warning with the snapshot id.
 */
import { AmbiguousPaidCallError, ServiceError, type ServiceClient, type SnapshotListItem } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import type { SourceContext } from '../core/types.js';
import { sleep } from '../core/sleep.js';

/** Slack around the attempt's time window when both ends come from the service's clock (Date has 1 s resolution). */
export const SERVICE_CLOCK_MARGIN_MS = 30_000;
/** Slack when only the local clock is known: it may be skewed against the service's. */
export const LOCAL_CLOCK_MARGIN_MS = 5 * 60_000;
/**
 * Longest a filter call can have been in flight when the process died before it answered: the client's header
 * timeout (180 s) plus its 429 back-offs, generously. Bounds the window of a rerun after a crash.
 */
export const CRASH_WINDOW_MS = 15 * 60_000;
/** A job started by a call that lost its answer may take a moment to appear in the list: wait this long first. */
export const SETTLE_MS = 1_500;
/** Filter calls per run: the first, and one more after each lost answer that provably started nothing. */
export const MAX_FILTER_CALLS = 3;

/** The Date header is truncated to whole seconds, so an offset measured from it may run up to a second slow. */
const UNANSWERED_SLACK_MS = 1000;

/** What is checkpointed before a filter call (JSON in the state file). */
export interface FilterAttempt {
  dataset_id: string;
  /** When the call was about to be made, on the service's clock when `offset_ms` is set (ISO 8601). */
  started_at: string;
  /** When the call was seen to fail without an answer, same clock; unset after a crash. */
  unanswered_at?: string;
  /** Service clock minus local clock (ms), from the list's Date header; unset: times are local. */
  offset_ms?: number;
  /** Snapshots of the dataset recent enough to fall in the window, listed before the call; unset: not listable. */
  known?: string[];
}

export type Resolution =
  | { kind: 'adopted'; snapshot: SnapshotListItem }
  | { kind: 'not_started'; attempt: FilterAttempt }
  | { kind: 'several'; snapshots: SnapshotListItem[] };

export interface ReconcileOptions {
  settleMs?: number;
  maxCalls?: number;
}

export class FilterReconciler {
  private readonly settleMs: number;

  constructor(
    private readonly client: ServiceClient,
    private readonly datasetId: string,
    opts: ReconcileOptions = {},
  ) {
    this.settleMs = opts.settleMs ?? SETTLE_MS;
  }

  /** Lists the dataset's snapshots and describes the attempt about to be made. */
  async begin(log: SourceContext['log']): Promise<FilterAttempt> {
    try {
      return this.attemptFrom(await this.list());
    } catch (err) {
      // A key that may not list snapshots (403) can still filter: only a lost answer then needs a person. A key
      // the service does not know (401) cannot filter either: that is the error to report, before anything else.
      if (err instanceof ServiceError && err.status >= 400 && !err.transient && err.status !== 401) {
        log.warn(
          `cannot list the snapshots of ${this.datasetId} (${err.message}): if the filter call loses its answer, ` +
            'you will have to find its snapshot yourself',
        );
        return { dataset_id: this.datasetId, started_at: new Date().toISOString() };
      }
      throw err;
    }
  }

  /** The attempt after its call failed without an answer. */
  unanswered(a: FilterAttempt): FilterAttempt {
    return { ...a, unanswered_at: new Date(this.serviceNow(a) + UNANSWERED_SLACK_MS).toISOString() };
  }

  /**
   * Which job, if any, the attempt started. `sameRun`: the call failed moments ago in this process, so every snapshot
   * listed now is recent enough (no upper bound is needed, nor trusted: it would rest on a clock offset measured
   * before the call). A rerun bounds the window by when the call was seen to fail, or could at most have lasted.
   */
  async resolve(a: FilterAttempt, signal: AbortSignal, sameRun = false): Promise<Resolution> {
    if (a.known === undefined) throw manualCheck(a);
    if (a.unanswered_at !== undefined) {
      const since = this.serviceNow(a) - (Date.parse(a.unanswered_at) - UNANSWERED_SLACK_MS);
      if (since < this.settleMs) await sleep(this.settleMs - since, signal);
    }
    const listed = await this.list();
    const margin = a.offset_ms !== undefined ? SERVICE_CLOCK_MARGIN_MS : LOCAL_CLOCK_MARGIN_MS;
    const from = Date.parse(a.started_at) - margin;
    const to = sameRun
      ? Infinity
      : (a.unanswered_at ? Date.parse(a.unanswered_at) : Date.parse(a.started_at) + CRASH_WINDOW_MS) + margin;
    const known = new Set(a.known);
    const candidates = listed.snapshots.filter((s) => {
      if (known.has(s.id)) return false;
      const created = s.created === undefined ? NaN : Date.parse(s.created);
      // Without a readable `created` only the known list can rule a snapshot out: keep it, so it is never missed.
      return Number.isNaN(created) || (created >= from && created <= to);
    });
    if (candidates.length === 1) return { kind: 'adopted', snapshot: candidates[0]! };
    if (candidates.length > 1) return { kind: 'several', snapshots: candidates };
    return { kind: 'not_started', attempt: this.attemptFrom(listed) };
  }

  private async list(): Promise<{ snapshots: SnapshotListItem[]; local: number; serviceTime?: Date }> {
    const r = await this.client.datasets.snapshots(this.datasetId);
    return { ...r, local: Date.now() };
  }

  private attemptFrom(listed: { snapshots: SnapshotListItem[]; local: number; serviceTime?: Date }): FilterAttempt {
    const service = listed.serviceTime?.getTime();
    const startedAt = service ?? listed.local;
    const margin = service !== undefined ? SERVICE_CLOCK_MARGIN_MS : LOCAL_CLOCK_MARGIN_MS;
    // Older snapshots fall outside any window this attempt will look at: the state file need not carry them.
    const known = listed.snapshots
      .filter((s) => {
        const created = s.created === undefined ? NaN : Date.parse(s.created);
        return Number.isNaN(created) || created >= startedAt - margin;
      })
      .map((s) => s.id);
    return {
      dataset_id: this.datasetId,
      started_at: new Date(startedAt).toISOString(),
      ...(service !== undefined && { offset_ms: service - listed.local }),
      known,
    };
  }

  private serviceNow(a: FilterAttempt): number {
    return Date.now() + (a.offset_ms ?? 0);
  }
}

/**
 * Starts the filter job once, whatever happens to the answers: resumes an attempt a crashed or failed run left in
 * `ctx.state[attemptKey]`, checkpoints each new attempt before calling `post`, and resolves lost answers with the
 * snapshot list. Returns the snapshot id of the job (the caller checkpoints it and clears the attempt).
 */
export async function startFilterJobOnce(opts: {
  client: ServiceClient;
  ctx: SourceContext;
  datasetId: string;
  attemptKey: string;
  post: () => Promise<{ snapshot_id: string }>;
  reconcile?: ReconcileOptions;
}): Promise<string> {
  const { ctx, attemptKey } = opts;
  const rec = new FilterReconciler(opts.client, opts.datasetId, opts.reconcile);
  const maxCalls = opts.reconcile?.maxCalls ?? MAX_FILTER_CALLS;

  let attempt: FilterAttempt | undefined;
  const pending = ctx.state.get<FilterAttempt>(attemptKey);
  if (pending) {
    ctx.log.info(`a filter call on ${pending.dataset_id} at ${pending.started_at} got no answer: looking for its job`);
    const r = await resolveOrThrow(rec, pending, ctx);
    if (typeof r === 'string') return r;
    attempt = r;
  }

  let lastError: AmbiguousPaidCallError | undefined;
  for (let calls = 0; calls < maxCalls; calls++) {
    attempt ??= await rec.begin(ctx.log);
    await ctx.state.set(attemptKey, attempt);
    try {
      const { snapshot_id } = await opts.post();
      return snapshot_id;
    } catch (err) {
      if (!(err instanceof AmbiguousPaidCallError)) {
        // The service answered (a refusal, or a 429 the client gave up on): no job was started.
        if (answeredByService(err)) await ctx.state.delete(attemptKey);
        throw err;
      }
      lastError = err;
      const unanswered = rec.unanswered(attempt);
      await ctx.state.set(attemptKey, unanswered);
      ctx.log.warn(`filter call got no answer (${err.message}): looking for the job it may have started`);
      const r = await resolveOrThrow(rec, unanswered, ctx, err);
      if (typeof r === 'string') return r;
      attempt = r;
    }
  }
  // Every call lost its answer and provably started nothing: nothing is pending.
  await ctx.state.delete(attemptKey);
  throw new SluiceError(
    `the filter call on ${opts.datasetId} failed ${maxCalls} times without an answer, and the service started no job` +
      (lastError ? ` (last: ${lastError.message})` : ''),
    {
      hint: 'the service looks unwell: run the same command again later (nothing was paid)',
      ...(lastError && { cause: lastError }),
    },
  );
}

/**
 * The adopted snapshot id, or the next attempt when nothing was started. `lostNow`: the call's error in this run
 * (unset when resolving an attempt an earlier run left behind).
 */
async function resolveOrThrow(
  rec: FilterReconciler,
  attempt: FilterAttempt,
  ctx: SourceContext,
  lostNow?: AmbiguousPaidCallError,
): Promise<string | FilterAttempt> {
  const cause = lostNow;
  let r: Resolution;
  try {
    r = await rec.resolve(attempt, ctx.signal, lostNow !== undefined);
  } catch (err) {
    if (ctx.signal.aborted || (err instanceof SluiceError && !(err instanceof ServiceError))) throw err;
    throw new SluiceError(
      `a filter call on ${attempt.dataset_id} got no answer, and its job could not be looked for: ` +
        (err instanceof Error ? err.message : String(err)),
      {
        hint: 'run the same command again: it looks for the job among the dataset’s snapshots before starting another',
        cause: err,
      },
    );
  }
  if (r.kind === 'adopted') {
    const s = r.snapshot;
    ctx.log.warn(
      `recovered the lost answer of the filter call: snapshot ${s.id} (created ${s.created ?? '?'}, ${s.status ?? '?'}) is its job; no second job started`,
    );
    return s.id;
  }
  if (r.kind === 'several') {
    const ids = r.snapshots.map((s) => `${s.id} (created ${s.created ?? '?'}, ${s.status ?? '?'})`).join(', ');
    throw new SluiceError(
      `a filter call on ${attempt.dataset_id} got no answer, and ${r.snapshots.length} snapshots started meanwhile could be its job: ${ids}`,
      {
        hint:
          'set source.snapshot_id to the one this pipeline started (`sluice datasets snapshot <id>` shows each), ' +
          'or run with --fresh to start a new, paid, filter job',
        cause,
      },
    );
  }
  ctx.log.info(`the filter call on ${attempt.dataset_id} started no job: it may be made again`);
  return r.attempt;
}

/** A service refusal, possibly wrapped by the caller (e.g. a 404 turned into "dataset does not exist"). */
function answeredByService(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; depth++, e = e.cause) {
    if (e instanceof AmbiguousPaidCallError) return false;
    if (e instanceof ServiceError) return true;
  }
  return false;
}

/** The attempt was made without a snapshot list to compare with: only a person can tell what it started. */
function manualCheck(a: FilterAttempt): SluiceError {
  return new SluiceError(
    `a filter call on ${a.dataset_id} at ${a.started_at} got no answer, and the dataset's snapshots cannot be listed to find its job`,
    {
      hint:
        'look for a snapshot of the dataset created at that time (the service dashboard); set source.snapshot_id to it, ' +
        'or run with --fresh if there is none',
    },
  );
}
