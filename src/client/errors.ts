/**
 * One error family for everything the service says no with. The service has no single error envelope
 * (docs/service.md §6): JSON `{error}`, `{validation_errors}`, deep lookup's `{error: {code, message}}`, plain-text
 * 401/404/202 bodies, and `x-brd-error*` headers on `/request` even with HTTP 200. `ServiceError` carries the
 * status, the service's code and the service's own message, whatever shape they came in.
 *
 * When no answer arrived (status 0) its `cause` is the transport's `NetworkError`, which says whether the request
 * may have reached the service. Each error says itself whether trying again can help (`transient`, read by
 * core/retry.ts): never by its message.
 */
import { EXIT_CODES, NetworkError, SluiceError, type RetryClassified } from '../core/errors.js';
import { redact } from '../core/redact.js';
import { retryableStatus } from '../core/retry.js';

export interface ServiceErrorInit {
  method: string;
  path: string;
  /** HTTP status; 0 when no response arrived (network). */
  status: number;
  /** The service's machine-readable code, when it gave one (`validation`, `REQUEST_NOT_FOUND`, `client_10110`…). */
  code?: string;
  /** The service's own words (or, for network errors, the transport's). */
  serviceMessage: string;
  /** Validation messages, when the service listed them. */
  details?: string[];
  /** Milliseconds the service asked us to wait (Retry-After). */
  retryAfterMs?: number;
  /** For status 0: the transport's failure. */
  cause?: unknown;
  hint?: string;
  /**
   * Whether asking again can help, when the status alone does not tell: an answer that fails the same way every
   * time although its status says "busy" (`unexpected_q`, `no_peers`), or a cut-short 200 that will not.
   */
  transient?: boolean;
  /** The exit code when this error ends the run (EXIT_CODES; default failure). */
  exitCode?: number;
}

export class ServiceError extends SluiceError implements RetryClassified {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly code?: string;
  readonly serviceMessage: string;
  readonly details: string[];
  readonly retryAfterMs?: number;
  /** The service was busy or failed (429, 5xx), or never answered: asking again may succeed. */
  readonly transient: boolean;

  constructor(init: ServiceErrorInit) {
    const what = init.status === 0 ? 'network error' : `${init.status}`;
    const msg = redact(`${init.method} ${init.path}: ${what}: ${init.serviceMessage}`);
    super(msg, {
      hint: init.hint ?? hintFor(init.status, init.cause),
      cause: init.cause,
      // A refused key is configuration (fix it, then run), never "rerun to resume".
      ...((init.exitCode !== undefined || init.status === 401) && {
        exitCode: init.exitCode ?? EXIT_CODES.config,
      }),
    });
    this.name = 'ServiceError';
    this.method = init.method;
    this.path = init.path;
    this.status = init.status;
    if (init.code !== undefined) this.code = init.code;
    this.serviceMessage = redact(init.serviceMessage);
    this.details = (init.details ?? []).map(redact);
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    this.transient = init.transient ?? (init.status === 0 || retryableStatus(init.status));
  }

  /**
   * Whether the request may have reached the service: false only when the transport proved it never left (the
   * connection was never established). Any answer, even an error status, means it arrived.
   */
  get sent(): boolean {
    return !(this.cause instanceof NetworkError) || this.cause.sent;
  }
}

/** No answer arrived: the transport failed (`cause`) before or while the answer was read. */
export function networkFailure(where: { method: string; path: string }, cause: NetworkError): ServiceError {
  return new ServiceError({
    method: where.method,
    path: where.path,
    status: 0,
    serviceMessage: cause.code !== undefined ? `${cause.code}: ${cause.message}` : cause.message,
    cause,
  });
}

/**
 * "Not ready" from a download or a parts count (202, or a 400 saying so): the snapshot (or export) is still being
 * built, sometimes even after its status said ready. Asking again later succeeds, so it is transient while the
 * caller's wait lasts (`final` unset); the error a caller finally throws (`final: true`) is not, since the caller
 * already waited as long as it was allowed to.
 */
export class NotReadyError extends ServiceError {
  override readonly transient: boolean;

  constructor(init: Omit<ServiceErrorInit, 'status'> & { final?: boolean; status?: number }) {
    super({
      ...init,
      status: init.status ?? 202,
      hint:
        init.hint ??
        'the service is still preparing the snapshot file: run again later (committed parts are kept and the ' +
          'same snapshot is downloaded; nothing is paid again), or raise source.poll.timeout_s',
    });
    this.name = 'NotReadyError';
    this.transient = init.final !== true;
  }
}

/**
 * A paid or account-changing call that failed after the request may have reached the service. It is not retried
 * (that could start a second paid job); the user must look before trying again.
 */
export class AmbiguousPaidCallError extends ServiceError {
  /** Terminal whatever the status: only a person (or a reconciliation with the service's records) may repeat it. */
  override readonly transient = false;

  constructor(init: ServiceErrorInit) {
    super({
      ...init,
      hint:
        init.hint ??
        'this call starts paid or account-changing work and the service may have received it: check the account ' +
          '(e.g. `sluice datasets snapshot <id>` for a filter job, the zone settings) before running it again',
    });
    this.name = 'AmbiguousPaidCallError';
  }
}

/** A 401's fix line: names the variable the key was read from, which is SLUICE_API_KEY unless the pipeline says other. */
export function apiKeyRefusedHint(variable: string | undefined): string {
  return `the API key was refused: set ${variable ?? 'SLUICE_API_KEY'} to a valid key`;
}

/**
 * The service was never reached: every connection attempt of the first contact failed before a request was sent
 * (refused, unknown host, no route, connect timeout). Terminal: the client already tried a few times within seconds
 * (reach.ts), and retrying the unit (or the run's plan) would only stretch a wrong base_url or a downed service into
 * a minute of attempts before the same answer. Nothing reached the service, so nothing was paid.
 */
export class UnreachableServiceError extends ServiceError {
  override readonly transient = false;

  constructor(
    readonly baseUrl: string,
    init: ServiceErrorInit,
  ) {
    super({
      ...init,
      hint:
        init.hint ??
        `check service.base_url (${baseUrl}) and that the service is up and reachable from this machine (DNS, ` +
          'firewall, proxy), then run again; nothing was sent, so nothing was paid',
    });
    this.name = 'UnreachableServiceError';
    this.message = redact(`cannot reach ${baseUrl}: ${init.serviceMessage}`);
  }
}

/**
 * The run stopped itself before the service blocks its IP: `count` answers of 429 within five minutes from
 * `address`, where the service blocks at `blockAt` (docs/service.md §6). Terminal: retrying is what it prevents.
 */
export class RateBudgetSpentError extends SluiceError implements RetryClassified {
  readonly transient = false;

  constructor(
    readonly address: string,
    readonly count: number,
    readonly blockAt: number,
  ) {
    super(
      `stopped: ${address} answered 429 (too many requests) ${count} times within 5 minutes; the service blocks an ` +
        `IP that gets ${blockAt} within 5 minutes, on every call, until its support clears it`,
      {
        hint:
          'wait 5 minutes, then run again (committed work is kept, nothing is paid twice); if it happens again, ' +
          "lower the source's concurrency or rate_limit, and look for other jobs using this API key or IP at the same time",
      },
    );
    this.name = 'RateBudgetSpentError';
  }
}

/**
 * The service refuses this machine's IP on every call (a 403 here, and a 403 on a call any key may make): the block
 * that follows 25 answers of 429 within five minutes (docs/service.md §6). Only the vendor's support lifts it.
 */
export class BlockedIpError extends ServiceError {
  override readonly transient = false;

  constructor(init: ServiceErrorInit, recent429: number) {
    super({
      ...init,
      hint:
        'ask Bright Data support (support@brightdata.com) to clear the block of this IP, and run nothing against ' +
        'the service from it until they have; then run again (committed work is kept)' +
        (recent429 > 0 ? '' : '. Another process on this IP may have collected the 429s'),
    });
    this.name = 'BlockedIpError';
    this.message = redact(
      `the service refuses this IP on every call (403 on ${init.method} ${init.path}, and on GET /status): it is ` +
        `blocked, as the service does after 25 answers of 429 within 5 minutes` +
        (recent429 > 0 ? ` (this run had ${recent429} in the last 5 minutes)` : ''),
    );
  }
}

function hintFor(status: number, cause: unknown): string {
  if (status === 0 && cause instanceof NetworkError && cause.sent)
    return 'the connection to the service broke: run again (completed work is kept); if it keeps happening, check the network';
  if (status === 0) return 'the service could not be reached: check base_url and the network, then run again';
  if (status === 202) return 'the service is still preparing this answer: wait a little, then run again';
  if (status === 401) return apiKeyRefusedHint(undefined);
  if (status === 402) return 'the account balance is too low: add funds or lower records_limit';
  // A 403 with a code of the service's has that code's fix (error-codes.ts); without one it is a permission or
  // policy refusal (docs/service.md §6).
  if (status === 403)
    return (
      'the service refused this call: the API key lacks permission for it (zone changes need an Admin or Ops key), ' +
      "or the account's policy forbids it (identity checks, compliance)"
    );
  if (status === 404) return 'check the id or name in the request: the service does not know it';
  if (status === 429)
    return (
      'the service is rate limiting: run again in a few minutes (completed work is kept), with a lower concurrency ' +
      'or rate_limit; never retry in a loop: the service blocks an IP that gets 25 answers of 429 within 5 minutes'
    );
  if (status >= 500) return 'the service failed: run again later (completed work is kept)';
  return 'fix the request as the service says and run again';
}
