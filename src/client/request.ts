/**
 * `POST /request`: a search or reviews page through a zone. Billed per successful request only (docs/service.md §5.6), so
 * it is not a paid call for the retry policy, but a billed one (`bills`): the crawl records each answer in the run's
 * ledger of paid work. The real outcome can hide in headers: the client (http.ts) reads
 * `x-brd-status-code` and the `x-brd-error*` headers before this module sees the answer, so a failure reported that
 * way arrives here as the error it is, the service's code leading its message (error-codes.ts: a zone of the wrong
 * type names the zone and the type it must have). An empty 200 is an error too, never "no results".
 */
import type { PageRequest, RequestApi } from './api.js';
import { NetworkError } from '../core/errors.js';
import { ServiceError } from './errors.js';
import type { HttpCore } from './http.js';
import { answerDate } from './service-clock.js';
import { endsEarly } from './truncated.js';

export function requestApi(http: HttpCore): RequestApi {
  return {
    page(req: PageRequest, opts = {}) {
      const format = req.format ?? 'raw';
      const call = {
        method: 'POST' as const,
        path: '/request',
        bills: 'request' as const,
        json: { zone: req.zone, url: req.url, format },
        zone: req.zone,
        ...(opts.signal && { signal: opts.signal }),
        ...(opts.onRetry && { onRetry: opts.onRetry }),
      };
      return http.call(call, async (res) => {
        const text = await http.answerText(call, res);
        const fail = (status: number, serviceMessage: string): ServiceError =>
          new ServiceError({ method: 'POST', path: '/request', status, serviceMessage });
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
