/**
 * The transport's failures, typed where they happen: whatever undici or Node throws while a request is made or its
 * body is read becomes a `NetworkError`, so nothing past the client reads a socket error's code or message. This
 * is the one place that knows those codes, and only to tell whether the request may have reached the service.
 */
import { Readable, finished } from 'node:stream';
import { NetworkError } from '../core/errors.js';
import { redact } from '../core/redact.js';

/**
 * Failures that prove the request never left this machine: no connection was ever established (refused, no such
 * host, no route, connect timeout). Anything else may have happened after the service read the request.
 */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** The transport's code: undici puts it on the error or, for a socket error, on its `cause`. */
function codeOf(e: unknown): string | undefined {
  const own = (e as { code?: unknown } | undefined)?.code;
  if (typeof own === 'string') return own;
  const inner = (e as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof inner === 'string' ? inner : undefined;
}

/**
 * A transport failure as a `NetworkError`. `phase: 'body'` means the answer had started to arrive, so the request
 * was certainly sent; before that, only a failure to connect proves it was not.
 */
export function transportFailure(e: unknown, phase: 'request' | 'body'): NetworkError {
  if (e instanceof NetworkError) return e;
  const code = codeOf(e);
  const text = e instanceof Error ? e.message : String(e);
  const what = phase === 'body' ? 'the connection broke while the answer was read' : text;
  return new NetworkError(redact(phase === 'body' ? `${what}: ${text}` : text), {
    ...(code !== undefined && { code }),
    sent: phase === 'body' || code === undefined || !NEVER_SENT.has(code),
    cause: e,
  });
}

/**
 * The body of a streamed answer, with every failure of the underlying socket (a reset, undici's "other side
 * closed" or "terminated", a body timeout, a close before the end) turned into the error `fail` makes of it.
 * A consumer that stops early releases the socket; an error the consumer itself destroys the stream with is its
 * own and is left alone.
 */
export function guardedBody(body: Readable, fail: (e: unknown) => Error): Readable {
  const out = new Readable({
    // Matches the decoders' 64 KiB input pieces: fewer pauses of the socket than the 16 KiB default.
    highWaterMark: 64 * 1024,
    read() {
      body.resume();
    },
    destroy(err, cb) {
      if (!body.destroyed) body.destroy();
      cb(err);
    },
  });
  body.on('data', (chunk: Buffer) => {
    if (!out.push(chunk)) body.pause();
  });
  finished(body, { writable: false }, (err) => {
    if (out.destroyed) return;
    if (err) out.destroy(fail(err));
    else out.push(null);
  });
  return out;
}
