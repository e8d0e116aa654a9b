/**
 * `POST /request`: a search or reviews page through a zone. Billed per successful request only (docs/service.md §5.6), so
 * it is not a paid call for the retry policy. The real outcome can hide in headers: an `x-brd-error` or
 * `x-brd-err-code` header is an error even on HTTP 200, and an empty 200 is an error too, never "no results".
 */
import type { PageRequest, RequestApi } from './api.js';
import { NetworkError } from '../core/errors.js';
import { ServiceError } from './errors.js';
import type { HttpCore, RawResponse } from './http.js';
import { answerDate } from './service-clock.js';
import { endsEarly } from './truncated.js';

export function requestApi(http: HttpCore): RequestApi {
  return {
    page(req: PageRequest, opts = {}) {
      const format = req.format ?? 'raw';
      const call = {
        method: 'POST' as const,
        path: '/request',
        json: { zone: req.zone, url: req.url, format },
        ...(opts.signal && { signal: opts.signal }),
        ...(opts.onRetry && { onRetry: opts.onRetry }),
      };
      return http.call(call, async (res) => {
        const text = await http.answerText(call, res);
        const fail = (status: number, serviceMessage: string, code?: string): ServiceError => {
          const permanent = code === undefined ? undefined : PERMANENT[code];
          return new ServiceError({
            method: 'POST',
            path: '/request',
            status,
            // The code is what the user looks up: it leads the message of an error that will not go away.
            serviceMessage: permanent ? `${code}: ${serviceMessage}` : serviceMessage,
            ...(code && { code }),
            ...(permanent && { transient: false, hint: permanent }),
          });
        };
        const headerError = brdError(res);
        if (headerError) throw fail(headerError.status, headerError.message, headerError.code);
        if (text.trim() === '')
          throw fail(502, 'empty answer with HTTP 200 and no error header (treated as a failed request)');
        if (endsEarly(text)) throw cutShort(text);
        let payload: unknown = parseMaybeJson(text);
        if (format === 'json') {
          // The envelope {status_code, headers, body}: body is the page as a string.
          const env = payload as { status_code?: unknown; body?: unknown };
          if (env === null || typeof env !== 'object' || typeof env.body !== 'string')
            throw fail(502, 'format "json" answer is not an envelope {status_code, headers, body}');
          if (typeof env.status_code === 'number' && env.status_code >= 400)
            throw fail(env.status_code, `the target answered ${env.status_code}`);
          if (endsEarly(env.body)) throw cutShort(env.body);
          payload = parseMaybeJson(env.body);
        }
        return { payload, bytes: Buffer.byteLength(text), fetchedAt: answerDate(res.headers) ?? new Date() };
      });
    },
  };
}

/**
 * Service codes that fail the same way every time, though their status (502) says "try again" (docs/service.md §5.6):
 * retrying them only bills the wait. Each with what to change.
 */
const PERMANENT: Readonly<Record<string, string>> = {
  unexpected_q:
    'the search engine cut the query short (its detected_query differs from the query): shorten the query (at ' +
    'most 32 words) or remove it; the request was not billed',
  no_peers:
    'the service has no peers for this request (the zone has none in the country or targeting asked for): change ' +
    "the zone's country or targeting, or use another zone; the request was not billed",
};

/** A page whose JSON stops before its end: the transfer broke (transient), the page is not HTML. */
function cutShort(text: string): ServiceError {
  const what = `the answer was cut short: its JSON stops after ${Buffer.byteLength(text)} bytes`;
  return new ServiceError({
    method: 'POST',
    path: '/request',
    status: 0,
    serviceMessage: what,
    cause: new NetworkError(what, { sent: true }),
  });
}

function header(res: RawResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function brdError(res: RawResponse): { status: number; message: string; code?: string } | undefined {
  const message = header(res, 'x-brd-error') ?? header(res, 'x-brd-err-msg') ?? header(res, 'x-luminati-error');
  const code = header(res, 'x-brd-err-code') ?? header(res, 'x-brd-error-code');
  if (message === undefined && code === undefined) return undefined;
  const status = Number(header(res, 'x-brd-status-code'));
  return {
    status: Number.isInteger(status) && status >= 400 ? status : 502,
    message: message ?? `service error ${code}`,
    ...(code !== undefined && { code }),
  };
}

/** Parsed JSON when the text is JSON (brd_json=1 pages), else the text itself (HTML). */
function parseMaybeJson(text: string): unknown {
  const t = text.trimStart();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}
