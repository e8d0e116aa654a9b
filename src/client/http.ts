/**
 * The transport under every API area: one undici Pool (bounded connections), one way of turning the service's many
 * error shapes into a `ServiceError`, and the retry decisions of core/retry.ts applied to each request.
 *
 * - 429, 5xx and network errors are transient (each error says so itself) and retried under the client's
 *   `RetryPolicy`: exponential backoff with jitter, Retry-After honoured, each wait capped at `maxDelayMs`. Other
 *   4xx never are (they fail the same way again).
 * - Calls that start paid or account-changing work (`paid: true`: filter, trigger, enrich, zone create, IP refresh,
 *   domain removal) are retried only when the service provably did not act on them: the connection was never
 *   established (`NetworkError.sent` is false), or the service answered 429 (an explicit refusal before any work;
 *   rejected requests are not billed, docs/service.md §6). A 5xx or a connection lost after the request was sent
 *   may have started the job, so it surfaces as `AmbiguousPaidCallError` instead of a second paid job.
 * - A service never reached yet (every connection refused, host unknown) gets a few quick tries within about 10 s,
 *   then `UnreachableServiceError` (first-contact.ts); after its first answer, the full policy applies.
 * - A streamed body (`send`) fails with a `ServiceError` of status 0 whose cause is a `NetworkError`, whatever
 *   undici threw, so callers downstream classify it without reading messages.
 * - Every request, whatever its caller, first takes a permit from the client's one `ServiceThrottle` (throttle.ts):
 *   one 429 budget for the service's address, a slow start, a hold after each 429, and a stop before the service
 *   would block the IP. A 403 that a call any key may make (`GET /status`) also gets is that block, named as such.
 * - The real status of an answer is read first, before anything else looks at it: a 200 whose `x-brd-status-code`
 *   says 429 (a throttled zone, docs/service.md §5.6) is a 429 for the throttle, the retry policy and the caller
 *   alike, and a 200 with the service's error headers is that error, its code leading the message.
 * - Each answer's `Date` header sets the client's `ServiceClock` (service-clock.ts): the service's time, not this
 *   machine's.
 * - A 200 whose JSON ends early (a reset or a proxy cutting the answer) is a transient failure like a broken
 *   connection; only a complete answer that is not JSON points at `base_url`.
 *
 * How an error answer's shapes become a `ServiceError` is error-answers.ts: this file is a request's life.
 */
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher, type FormData } from 'undici';
import type { PaidKind } from '../core/paid-work.js';
import { redact } from '../core/redact.js';
import { RetryPolicy, markRetriesSpent, retrying } from '../core/retry.js';
import type { ClientOptions, RetryNotice } from './api.js';
import {
  AmbiguousPaidCallError,
  BlockedIpError,
  ServiceError,
  UnreachableServiceError,
  networkFailure,
} from './errors.js';
import { DEFAULT_ANSWER_LIMITS, callDeadline, readAnswer, type AnswerLimits } from './answers.js';
import { errInit, errorFrom, headerFailure, parseRetryAfter, realStatus } from './error-answers.js';
import { firstContactPolicy, withinFirstContactBudget } from './first-contact.js';
import { guardedBody, transportFailure } from './network.js';
import { ServiceClock } from './service-clock.js';
import { ServiceThrottle, realThrottleClock, type Outcome } from './throttle.js';
import { notJson } from './truncated.js';

export interface CallOptions {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  form?: FormData;
  /** Starts paid or account-changing work: see the retry policy above. */
  paid?: boolean;
  /**
   * The service bills this call when it answers it, as the ledger of paid work names it (core/paid-work.ts): the
   * source that makes the call records it there. Watchers are told such a call is paid (`POST /request` pages too,
   * which are safe to retry and so not `paid` above).
   */
  bills?: PaidKind;
  signal?: AbortSignal;
  /** Told before each retry's wait (in addition to the client-wide `onRetry`). */
  onRetry?: (info: RetryNotice) => void;
  /** Statuses that are answers for this call rather than errors (e.g. 202 on a download). */
  accept?: number[];
  /** The zone the call goes through (`POST /request`): the fixes of the service's zone codes name it. */
  zone?: string;
  /**
   * Reads an error answer the way this call knows it, before the retry decision: e.g. the cost report's 500 that
   * means a bad date (a configuration error, not the service failing). Returns the error to act on.
   */
  classify?: (err: ServiceError) => ServiceError;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/**
 * Sockets to the service when `connections` is not set: as many as the highest concurrency a source accepts (a crawl's
 * `concurrency` goes up to 64). A smaller pool silently caps a crawl: with 16, a crawl at concurrency 64 had 16
 * requests in flight and the rest queued in the pool, at a quarter of the pages per second. undici opens sockets
 * only when requests need them, so a lower concurrency opens no more than it uses.
 */
export const DEFAULT_CONNECTIONS = 64;

export class HttpCore {
  readonly baseUrl: string;
  private readonly pool: Pool;
  private readonly policy: RetryPolicy;
  /** While the service has never answered: a few quick tries, then `UnreachableServiceError` (first-contact.ts). */
  private readonly firstContact: RetryPolicy;
  /** Set by the first response of any status: the service exists at this address. */
  private reached = false;
  private readonly authorization: string;
  /** One 429 budget and slow start for every request to this address (throttle.ts). */
  readonly throttle: ServiceThrottle;
  /** The retry policy of every request (`service.retry`). */
  get retryPolicy(): RetryPolicy {
    return this.policy;
  }
  /** The service's time, from its answers' `Date` headers. */
  readonly clock = new ServiceClock();
  /** How large a JSON answer may be and how long a call may take, request to last byte (answers.ts). */
  private readonly answerLimits: AnswerLimits;

  constructor(private readonly opts: ClientOptions) {
    this.answerLimits = {
      maxAnswerBytes: opts.limits?.maxAnswerBytes ?? DEFAULT_ANSWER_LIMITS.maxAnswerBytes,
      callTimeoutMs: opts.limits?.callTimeoutMs ?? DEFAULT_ANSWER_LIMITS.callTimeoutMs,
    };
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    const t = opts.timeouts ?? {};
    this.pool = new Pool(new URL(this.baseUrl).origin, {
      connections: opts.connections ?? DEFAULT_CONNECTIONS,
      connectTimeout: t.connect ?? 10_000,
      // /request can wait for a page element server-side for up to 150 s (docs/service.md §5.6).
      headersTimeout: t.headers ?? 180_000,
      bodyTimeout: t.body ?? 120_000,
    });
    this.policy = new RetryPolicy({
      attempts: (opts.retry?.retries ?? 5) + 1,
      baseMs: opts.retry?.baseDelayMs ?? 500,
      maxMs: opts.retry?.maxDelayMs ?? 30_000,
    });
    this.firstContact = firstContactPolicy(this.policy);
    this.authorization = `Bearer ${opts.apiKey}`;
    this.throttle = new ServiceThrottle({
      address: this.baseUrl,
      maxWindow: opts.connections ?? DEFAULT_CONNECTIONS,
      holdBaseMs: this.policy.baseMs,
      holdMaxMs: this.policy.maxMs,
      clock: opts.throttle?.clock ?? realThrottleClock,
      ...(opts.throttle?.budget !== undefined && { budget: opts.throttle.budget }),
      ...(opts.throttle?.initialWindow !== undefined && { initialWindow: opts.throttle.initialWindow }),
      ...(opts.throttle?.peers !== undefined && { peers: opts.throttle.peers }),
    });
  }

  /**
   * A successful (2xx or accepted) response with its body unread. Errors are thrown as `ServiceError`, including
   * those of the body while it is streamed (status 0, cause `NetworkError`).
   */
  send(call: CallOptions): Promise<RawResponse> {
    return this.call(call, async (res) => ({
      ...res,
      body: guardedBody(res.body, (e) =>
        call.signal?.aborted ? (call.signal.reason as Error) : networkFailure(call, transportFailure(e, 'body')),
      ),
    }));
  }

  /** The answer parsed as JSON. */
  json<T>(call: CallOptions): Promise<T> {
    return this.call(call, async (res) => {
      const text = await this.answerText(call, res);
      // Every JSON call expects an answer: an empty 200 is a failed call (a paid one is then ambiguous), never "no data".
      if (text.trim() === '')
        throw new ServiceError({
          method: call.method,
          path: call.path,
          status: 502,
          serviceMessage: `empty answer with HTTP ${res.status}`,
        });
      try {
        return JSON.parse(text) as T;
      } catch (cause) {
        throw notJson(call, res, text, cause);
      }
    });
  }

  /** A 2xx answer's body read whole as text, within `limits.max_answer_bytes` (answers.ts). */
  answerText(call: CallOptions, res: RawResponse): Promise<string> {
    return readAnswer(res.body, call, res.status, this.answerLimits);
  }

  /**
   * Makes the call under the retry policy. `consume` turns a successful response into the result; a `ServiceError`
   * it throws (e.g. an error reported in headers on a 200) goes through the same policy as an error status, and
   * any other error it throws while reading the body counts as a network failure after the request was sent.
   */
  async call<T>(call: CallOptions, consume: (res: RawResponse) => Promise<T>): Promise<T> {
    const paid = call.paid === true || call.bills !== undefined;
    const ended = this.opts.onCall?.({ method: call.method, path: call.path, paid });
    if (!ended) return this.attempts(call, consume);
    try {
      return await this.attempts(call, consume, (status) => ended({ status }));
    } catch (error) {
      ended({ error, ...(error instanceof ServiceError && error.status > 0 && { status: error.status }) });
      throw error;
    }
  }

  /**
   * `answered`: told the status of the response that `consume` succeeded on. One request is tried under
   * `retrying()` (core/retry.ts); `next` is the client's decision on each failure (see the top of this file).
   */
  private attempts<T>(
    call: CallOptions,
    consume: (res: RawResponse) => Promise<T>,
    answered?: (status: number) => void,
  ): Promise<T> {
    const path = this.pathOf(call);
    const startedAt = Date.now();
    return retrying(() => this.once(call, path, consume, answered), {
      policy: this.policy,
      next: (attempt, err) => this.next(call, attempt, err, startedAt),
      onRetry: (attempt, err, delayMs) => this.notify(call, attempt, err as ServiceError, delayMs),
      ...(call.signal !== undefined && { signal: call.signal }),
    });
  }

  /** One try of the call: its result, or the `ServiceError` (classified by the call) that it failed with. */
  private async once<T>(
    call: CallOptions,
    path: string,
    consume: (res: RawResponse) => Promise<T>,
    answered?: (status: number) => void,
  ): Promise<T> {
    let err: ServiceError;
    const permit = await this.throttle.acquire(call.signal);
    // Each attempt, request to the answer's last byte consumed here, within `limits.call_timeout_s`.
    const deadline = callDeadline(call, this.answerLimits.callTimeoutMs, call.signal);
    let body: Readable | undefined;
    try {
      const res = await this.pool
        .request({
          method: call.method,
          path,
          headers: this.headers(call),
          body: call.form ?? (call.json !== undefined ? JSON.stringify(call.json) : undefined),
          signal: deadline.signal,
        })
        .then(
          (r) => (permit.done(outcomeOf(r)), r),
          (e: unknown) => {
            permit.done('no_answer');
            throw e;
          },
        );
      this.reached = true;
      this.clock.observe(res.headers);
      body = res.body;
      const ok =
        (res.statusCode >= 200 && res.statusCode < 300 && res.statusCode !== 202) ||
        call.accept?.includes(res.statusCode);
      // A success whose headers report a failure (the real status in x-brd-status-code, docs/service.md §5.6) is
      // that failure, before the caller reads a byte: retried, held and counted like the same status given outright.
      const inHeaders = ok ? headerFailure(call, res.statusCode, res.headers, this.opts.apiKeyVariable) : undefined;
      if (!ok) err = await this.refusal(call, res);
      else if (inHeaders) {
        await res.body.dump().catch(() => undefined);
        err = inHeaders;
      } else {
        try {
          const result = await consume({ status: res.statusCode, headers: res.headers, body: res.body });
          answered?.(res.statusCode);
          return result;
        } catch (e) {
          if (call.signal?.aborted) throw call.signal.reason;
          err = deadline.error() ?? (e instanceof ServiceError ? e : networkFailure(call, transportFailure(e, 'body')));
        }
      }
    } catch (e) {
      if (call.signal?.aborted) throw call.signal.reason;
      err = deadline.error() ?? networkFailure(call, transportFailure(e, 'request'));
    } finally {
      // A body handed on unread (`send`) keeps following the caller's signal, which cancels it.
      deadline.clear(body === undefined || body.readableEnded || body.destroyed);
    }
    throw call.classify ? call.classify(err) : err;
  }

  /**
   * After failed try `attempt`: the wait before the next, or undefined to give up with the error; throws the error
   * to report in its place (a paid call that may have acted, a service never reached).
   */
  private next(call: CallOptions, attempt: number, e: unknown, startedAt: number): number | undefined {
    // The caller's abort, thrown as its reason: nothing to decide.
    if (call.signal?.aborted || !(e instanceof ServiceError)) return undefined;
    const err = e;
    if (call.paid && err.transient && mayHaveActed(err))
      throw new AmbiguousPaidCallError({ ...errInit(err), cause: err });
    if (!this.reached && !err.sent) {
      if (!this.firstContact.shouldRetry(attempt, err)) throw this.unreachable(err);
      const delayMs = this.firstContact.delayMs(attempt, err);
      if (!withinFirstContactBudget(Date.now() - startedAt, delayMs)) throw this.unreachable(err);
      return delayMs;
    }
    if (this.policy.shouldRetry(attempt, err)) return this.policy.delayMs(attempt, err);
    // Retried to the end of the client's policy: the unit does not ask the same again (one budget per cause).
    if (attempt > 1 && err.transient) markRetriesSpent(err);
    return undefined;
  }

  async close(): Promise<void> {
    this.throttle.close(new Error('the service client was closed'));
    await this.pool.close();
  }

  /**
   * The error an answer that is not a success stands for. A 403 without the service's own code may be the IP block
   * rather than the key's permissions: the block refuses every call, so one call that any key may make (`GET
   * /status`) tells them apart.
   */
  private async refusal(call: CallOptions, res: Dispatcher.ResponseData): Promise<ServiceError> {
    const err = await errorFrom(call, res, this.opts.apiKeyVariable);
    if (err.status !== 403 || err.code !== undefined || call.path === STATUS_PATH) return err;
    const probe = await this.statusProbe(call.signal);
    return probe === 403 ? new BlockedIpError(errInit(err), this.throttle.count429()) : err;
  }

  /** The status `GET /status` answers with now (through the throttle like any request), or undefined. */
  private async statusProbe(signal: AbortSignal | undefined): Promise<number | undefined> {
    const permit = await this.throttle.acquire(signal).catch(() => undefined);
    if (permit === undefined) return undefined;
    try {
      const res = await this.pool.request({
        method: 'GET',
        path: `${new URL(this.baseUrl).pathname.replace(/\/+$/, '')}${STATUS_PATH}`,
        headers: this.headers({ method: 'GET', path: STATUS_PATH }),
        signal,
      });
      permit.done(outcomeOf(res));
      await res.body.dump().catch(() => undefined);
      return res.statusCode;
    } catch {
      permit.done('no_answer');
      return undefined;
    }
  }

  private pathOf(call: CallOptions): string {
    const prefix = new URL(this.baseUrl).pathname.replace(/\/+$/, '');
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const q = qs.toString();
    return `${prefix}${call.path}${q ? `?${q}` : ''}`;
  }

  private headers(call: CallOptions): Record<string, string> {
    const h: Record<string, string> = { authorization: this.authorization, 'user-agent': 'sluice' };
    if (call.json !== undefined && !call.form) h['content-type'] = 'application/json';
    return h;
  }

  private unreachable(err: ServiceError): UnreachableServiceError {
    const network = err.cause as { message?: string } | undefined;
    return new UnreachableServiceError(this.baseUrl, {
      ...errInit(err),
      serviceMessage: network?.message ?? err.serviceMessage,
      cause: err.cause,
    });
  }

  private notify(call: CallOptions, attempt: number, err: ServiceError, delayMs: number): void {
    const reason = redact(err.status === 0 ? err.serviceMessage : `${err.status} ${err.serviceMessage}`);
    this.opts.onRetry?.({ attempt, delayMs, reason, method: call.method, path: call.path });
    call.onRetry?.({ status: err.status, delayMs, reason, error: err });
  }
}

/** A free call any API key may make: what tells a blocked IP from a key without permission. */
const STATUS_PATH = '/status';

/**
 * What the throttle needs to know of an answer: its real status (a 429 in `x-brd-status-code` is a 429) and the wait
 * it asked for.
 */
function outcomeOf(res: Dispatcher.ResponseData): Outcome {
  const v = res.headers['retry-after'];
  const retryAfterMs = parseRetryAfter(Array.isArray(v) ? v[0] : v);
  return { status: realStatus(res.statusCode, res.headers), ...(retryAfterMs !== undefined && { retryAfterMs }) };
}

/**
 * Whether a failed paid call may have started its work: any failure after the request was sent, except a 429,
 * which the service answers before doing anything (docs/service.md §6).
 */
function mayHaveActed(err: ServiceError): boolean {
  return err.sent && err.status !== 429;
}
