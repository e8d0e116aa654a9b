/**
 * Telling an answer cut short on the way from an answer that is not the service's at all. Both fail `JSON.parse`;
 * only the first is worth asking again (a reset or a proxy ending the transfer early), and only the second means
 * base_url points somewhere else.
 */
import { NetworkError } from '../core/errors.js';
import { ServiceError } from './errors.js';

/**
 * Why `text` is an incomplete answer — fewer bytes than its Content-Length, or JSON that stops before its last
 * bracket closes — or undefined when it is complete (whatever it is).
 */
export function cutShortJson(text: string, headers: Record<string, string | string[] | undefined>): string | undefined {
  const declared = Number(first(headers['content-length']));
  const got = Buffer.byteLength(text);
  if (Number.isInteger(declared) && declared > got) return `${got} of ${declared} bytes`;
  return endsEarly(text) ? `the JSON stops after ${got} bytes, before its end` : undefined;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * True when `text` starts an object or array that it never closes, or stops inside a string: the beginning of
 * some JSON value, cut. Text that closes its brackets and still does not parse is malformed, not cut.
 */
export function endsEarly(text: string): boolean {
  const t = text.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return false;
    }
  }
  return inString || depth > 0;
}

/**
 * A 200 that does not parse as JSON. Cut short on the way (the JSON stops before its end, or fewer bytes than the
 * Content-Length said): a broken transfer, asked again under the retry policy. Complete and still not JSON: not the
 * service's answer at all, which points at base_url.
 */
export function notJson(
  call: { method: string; path: string },
  res: { status: number; headers: Record<string, string | string[] | undefined> },
  text: string,
  cause: unknown,
): ServiceError {
  const cut = cutShortJson(text, res.headers);
  if (cut !== undefined)
    return new ServiceError({
      method: call.method,
      path: call.path,
      status: 0,
      serviceMessage: `the answer was cut short (${cut}): ${text.slice(0, 80)}…`,
      cause: new NetworkError(`the answer was cut short: ${cut}`, { sent: true, cause }),
    });
  return new ServiceError({
    method: call.method,
    path: call.path,
    status: res.status,
    serviceMessage: `the answer is not JSON: ${text.slice(0, 200)}`,
    cause,
    hint: 'check base_url: it must point at the service API',
  });
}
