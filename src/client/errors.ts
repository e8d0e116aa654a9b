/**
 * One error family for everything the service says no with. The service has no single error envelope
 * (api-facts §6): JSON `{error}`, `{validation_errors}`, deep lookup's `{error: {code, message}}`, plain-text
 * 401/404/202 bodies, and `x-brd-error*` headers on `/request` even with HTTP 200. `ServiceError` carries the
 * status, the service's code and the service's own message, whatever shape they came in.
 */
import { SluiceError } from '../core/errors.js';
import { redact } from '../core/redact.js';

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
  cause?: unknown;
  hint?: string;
}

export class ServiceError extends SluiceError {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly code?: string;
  readonly serviceMessage: string;
  readonly details: string[];
  readonly retryAfterMs?: number;

  constructor(init: ServiceErrorInit) {
    const what = init.status === 0 ? 'network error' : `${init.status}`;
    const msg = redact(`${init.method} ${init.path}: ${what}: ${init.serviceMessage}`);
    super(msg, { hint: init.hint ?? hintFor(init.status), cause: init.cause });
    this.name = 'ServiceError';
    this.method = init.method;
    this.path = init.path;
    this.status = init.status;
    if (init.code !== undefined) this.code = init.code;
    this.serviceMessage = redact(init.serviceMessage);
    this.details = (init.details ?? []).map(redact);
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
  }
}

/** 202 from a download: the snapshot (or export) is still being built. Poll and try again. */
export class NotReadyError extends ServiceError {
  constructor(init: Omit<ServiceErrorInit, 'status'>) {
    super({ ...init, status: 202, hint: init.hint ?? 'the snapshot is still building: wait for status `ready`' });
    this.name = 'NotReadyError';
  }
}

/**
 * A paid or account-changing call that failed after the request may have reached the service. It is not retried
 * (that could start a second paid job); the user must look before trying again.
 */
export class AmbiguousPaidCallError extends ServiceError {
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

function hintFor(status: number): string {
  if (status === 0) return 'the service could not be reached: check base_url and the network, then run again';
  if (status === 202) return 'the service is still preparing this answer: wait a little, then run again';
  if (status === 401) return 'the API key was refused: set SLUICE_API_KEY to a valid key';
  if (status === 402) return 'the account balance is too low: add funds or lower records_limit';
  if (status === 403) return 'the API key lacks permission for this call (zone changes need an Admin or Ops key)';
  if (status === 404) return 'check the id or name in the request: the service does not know it';
  if (status === 429) return 'the service is rate limiting: lower concurrency or rate_limit, or run again later';
  if (status >= 500) return 'the service failed: run again later (completed work is kept)';
  return 'fix the request as the service says and run again';
}
