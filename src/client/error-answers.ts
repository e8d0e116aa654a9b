/**
 * The service's error answers read into a `ServiceError`, whatever shape it chose: a JSON body in one of several
 * forms, plain text, or headers (`x-brd-error`), with a Retry-After in seconds or as a date. Apart from the
 * transport (http.ts) because this is the service's vocabulary, not the request's life: it grows with every new
 * shape the service is seen answering with, and reads no state of the client.
 */
import type { Dispatcher } from 'undici';
import { readBounded } from './answers.js';
import { adviceFor, codeLedMessage } from './error-codes.js';
import { ServiceError, apiKeyRefusedHint } from './errors.js';

/** Error bodies are small; a huge one is not worth holding. */
const MAX_ERROR_BODY = 64 * 1024;

/** The fields of `e`, to build an error of another class that says the same. */
export function errInit(e: ServiceError): ConstructorParameters<typeof ServiceError>[0] {
  return {
    method: e.method,
    path: e.path,
    status: e.status,
    serviceMessage: e.serviceMessage,
    details: e.details,
    ...(e.code !== undefined && { code: e.code }),
    ...(e.retryAfterMs !== undefined && { retryAfterMs: e.retryAfterMs }),
  };
}

/** Reads the error answer in whichever shape the service chose (see errors.ts). */
export async function errorFrom(
  call: ErrorCall,
  res: Dispatcher.ResponseData,
  apiKeyVariable: string | undefined,
): Promise<ServiceError> {
  const text = await readBounded(res.body, MAX_ERROR_BODY).catch(() => '');
  return answerError(call, res.statusCode, res.headers, parseErrorBody(text), apiKeyVariable);
}

/** The call an error answer is about: where, and the zone its codes' fixes name (`POST /request`). */
export interface ErrorCall {
  method: string;
  path: string;
  zone?: string | undefined;
}

type Headers = Record<string, string | string[] | undefined>;

function headerOf(h: Headers, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The status an answer really has: its outer status, unless that is a success and `x-brd-status-code` says another
 * (docs/service.md §5.6: once a request reaches the page fetcher the outer status is 200 whatever happened). Read
 * before anything else looks at the answer: the 429 budget counts a 429 given either way.
 */
export function realStatus(outer: number, headers: Headers): number {
  if (outer < 200 || outer >= 300) return outer;
  const inner = Number(headerOf(headers, 'x-brd-status-code'));
  return Number.isInteger(inner) && inner >= 100 && inner <= 599 ? inner : outer;
}

/**
 * The failure a successful answer reports in its headers, or undefined: an `x-brd-error*` header (present on every
 * failure of the service's own, so an empty 200 with one is a failure, never "no results"), or a real status of 400
 * or more in `x-brd-status-code`. Its status is the real one (502 when the headers give an error but no status).
 */
export function headerFailure(
  call: ErrorCall,
  outer: number,
  headers: Headers,
  apiKeyVariable: string | undefined,
): ServiceError | undefined {
  const status = realStatus(outer, headers);
  const said = serviceSaid(headers);
  if (said.message !== undefined || said.code !== undefined)
    return answerError(call, status >= 400 ? status : 502, headers, { message: '' }, apiKeyVariable);
  if (status < 400) return undefined;
  // No error of the service's: the target's own status, passed on (docs/service.md §5.6).
  return new ServiceError({
    method: call.method,
    path: call.path,
    status,
    serviceMessage: `the target answered ${status}`,
    hint: 'the target site answered with an error status: check the target URL, or run again later',
  });
}

/** The service's own words and code, in whichever of its headers it put them. */
function serviceSaid(h: Headers): { message?: string; code?: string } {
  const message = headerOf(h, 'x-brd-error') ?? headerOf(h, 'x-brd-err-msg') ?? headerOf(h, 'x-luminati-error');
  const code = headerOf(h, 'x-brd-err-code') ?? headerOf(h, 'x-brd-error-code') ?? headerOf(h, 'x-luminati-error-code');
  return { ...(message !== undefined && { message }), ...(code !== undefined && { code }) };
}

/**
 * One error answer as a `ServiceError`: the headers' words and code win over the body's. A code from the headers
 * (docs/service.md §5.6) leads the message, with its own fix (error-codes.ts); only a 401 is the API key's.
 */
function answerError(
  call: ErrorCall,
  status: number,
  headers: Headers,
  body: { message: string; code?: string; details?: string[] },
  apiKeyVariable: string | undefined,
): ServiceError {
  const said = serviceSaid(headers);
  const code = said.code ?? body.code;
  const words = said.message ?? (body.message || (said.code ? `service error ${said.code}` : `HTTP ${status}`));
  const advice = said.code !== undefined ? adviceFor(said.code, { zone: call.zone }) : undefined;
  const retryAfterMs = parseRetryAfter(headerOf(headers, 'retry-after'));
  return new ServiceError({
    method: call.method,
    path: call.path,
    status,
    serviceMessage: said.code !== undefined ? codeLedMessage(said.code, words, advice?.says) : words,
    ...(code !== undefined && { code }),
    ...(body.details && { details: body.details }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(status === 401
      ? { hint: apiKeyRefusedHint(apiKeyVariable) }
      : advice !== undefined
        ? { hint: advice.hint, ...(advice.transient !== undefined && { transient: advice.transient }) }
        : said.code !== undefined && { hint: unknownCodeHint(said.code, status) }),
  });
}

/** A code sluice has no fix for: said as the service's, so the status's generic fix does not blame the wrong thing. */
function unknownCodeHint(code: string, status: number): string {
  if (status === 429 || status >= 500) return `the service answered ${code}: run again later (completed work is kept)`;
  return `the service refused the request with ${code}: look the code up in the service's error catalog, fix what it names, and run again`;
}

/** `{error: "…"}`, `{error: {code, message, details}}`, `{validation_errors: […]}`, `{message}`, or plain text. */
export function parseErrorBody(text: string): { message: string; code?: string; details?: string[] } {
  const trimmed = text.trim();
  let j: unknown;
  try {
    j = JSON.parse(trimmed);
  } catch {
    return { message: trimmed.slice(0, 500) };
  }
  if (j === null || typeof j !== 'object') return { message: trimmed.slice(0, 500) };
  const o = j as Record<string, unknown>;
  if (Array.isArray(o.validation_errors)) {
    const details = o.validation_errors.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
    return { message: details.join('; '), code: 'validation', details };
  }
  if (typeof o.error === 'string') {
    return { message: o.error, ...(typeof o.error_code === 'string' && { code: o.error_code }) };
  }
  if (o.error && typeof o.error === 'object') {
    const e = o.error as Record<string, unknown>;
    const message = typeof e.message === 'string' ? e.message : JSON.stringify(e);
    const details = typeof e.details === 'string' ? [e.details] : undefined;
    return { message, ...(typeof e.code === 'string' && { code: e.code }), ...(details && { details }) };
  }
  if (typeof o.message === 'string') return { message: o.message };
  return { message: trimmed.slice(0, 500) };
}

/** Seconds or an HTTP date → milliseconds from now. */
export function parseRetryAfter(v: string | undefined): number | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
