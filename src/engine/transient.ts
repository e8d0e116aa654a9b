/**
 * Which failures of a unit are worth reading the unit again: the network, the service's 429/5xx, and bytes that
 * arrived short or corrupt. A 4xx, a config problem or a sink that cannot write will fail the same way again.
 */
import { DecodeError } from '../core/errors.js';

const transientCodes = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_ABORTED',
  'Z_BUF_ERROR',
  'Z_DATA_ERROR',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

export function isTransient(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof DecodeError) return true;
    const x = e as { status?: unknown; code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
    if (typeof x.status === 'number' && (x.status === 0 || x.status === 429 || x.status >= 500)) return true;
    if (typeof x.code === 'string' && transientCodes.has(x.code)) return true;
    if (x.message === 'terminated' || x.message === 'other side closed') return true;
    e = x.cause;
  }
  return false;
}
