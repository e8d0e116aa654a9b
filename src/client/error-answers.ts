/**
 * The service's error answers read into a `ServiceError`, whatever shape it chose: a JSON body in one of several
 * forms, plain text, or headers (`x-brd-error`), with a Retry-After in seconds or as a date. Apart from the
 * transport (http.ts) because this is the service's vocabulary, not the request's life: it grows with every new
 * shape the service is seen answering with, and reads no state of the client.
 */
import type { Dispatcher } from 'undici';
import { readBounded } from './answers.js';
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
  call: { method: string; path: string },
  res: Dispatcher.ResponseData,
  apiKeyVariable: string | undefined,
): Promise<ServiceError> {
  const text = await readBounded(res.body, MAX_ERROR_BODY).catch(() => '');
  const parsed = parseErrorBody(text);
  const h = res.headers;
  const header = (name: string): string | undefined => {
    const v = h[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const brdMessage = header('x-brd-error') ?? header('x-brd-err-msg') ?? header('x-luminati-error');
  const brdCode = header('x-brd-err-code') ?? header('x-brd-error-code');
  const retryAfterMs = parseRetryAfter(header('retry-after'));
  return new ServiceError({
    method: call.method,
    path: call.path,
    status: res.statusCode,
    serviceMessage: brdMessage ?? (parsed.message || `HTTP ${res.statusCode}`),
    ...((brdCode ?? parsed.code) !== undefined && { code: (brdCode ?? parsed.code)! }),
    ...(parsed.details && { details: parsed.details }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(res.statusCode === 401 && { hint: apiKeyRefusedHint(apiKeyVariable) }),
  });
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
