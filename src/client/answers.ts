/**
 * How the client reads an answer it must hold whole (a JSON answer, an error body): never more than a bound, and
 * never for longer than a bound. A service that streams without end, or one byte at a time, fails the call with a
 * message naming the limit, rather than growing the process until it dies or keeping it waiting forever (undici's
 * body timeout only covers pauses, and a drip-fed body never pauses long enough).
 *
 * Both failures are terminal for the call: the service would send the same answer again.
 */
import type { Readable } from 'node:stream';
import { DEFAULT_LIMITS, LIMIT_OPTIONS, formatBytes, type Limits } from '../core/limits.js';
import { redact } from '../core/redact.js';
import { ServiceError } from './errors.js';
import { formatDuration } from '../core/duration.js';

/** The limits that apply to reading answers (core/limits.ts). */
export type AnswerLimits = Pick<Limits, 'maxAnswerBytes' | 'callTimeoutMs'>;

export const DEFAULT_ANSWER_LIMITS: AnswerLimits = {
  maxAnswerBytes: DEFAULT_LIMITS.maxAnswerBytes,
  callTimeoutMs: DEFAULT_LIMITS.callTimeoutMs,
};

interface Where {
  method: string;
  path: string;
  paid?: boolean;
}

/** An answer past a limit of the run. Not transient (asking again gets the same answer); paid calls say so. */
export class AnswerLimitError extends ServiceError {
  override readonly transient = false;
  readonly limit: 'maxAnswerBytes' | 'callTimeoutMs';

  constructor(where: Where, status: number, limit: 'maxAnswerBytes' | 'callTimeoutMs', what: string) {
    super({
      method: where.method,
      path: where.path,
      status,
      serviceMessage: what,
      hint:
        (where.paid
          ? 'this call starts paid work and the service received it: check the account before running again ' +
            '(`sluice datasets snapshot <id>` for a filter job); '
          : 'the service (or something between) sent a broken answer: run again later; ') +
        `if such answers are genuine, raise ${LIMIT_OPTIONS[limit]} in the pipeline file`,
    });
    this.name = 'AnswerLimitError';
    this.limit = limit;
    // The status is the answer's (200 for a body too large; 0 when none had arrived): not worth a word here.
    this.message = redact(`${where.method} ${where.path}: ${what}`);
  }
}

/**
 * The body as text, read up to `maxBytes`. `over` says what exceeding it means: an error for answers that are
 * needed whole (JSON), or undefined to keep the first `maxBytes` and stop reading (an error body's message).
 * Either way the rest is never read: the body is destroyed, which releases its socket.
 */
export async function readBounded(body: Readable, maxBytes: number, over?: () => Error): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const c of body as AsyncIterable<Buffer>) {
      if (size + c.length > maxBytes) {
        if (over) throw over();
        chunks.push(c.subarray(0, maxBytes - size));
        size = maxBytes;
        break;
      }
      chunks.push(c);
      size += c.length;
    }
  } finally {
    if (!body.readableEnded) body.destroy();
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** A JSON answer's text, whole, or `AnswerLimitError` past `limits.maxAnswerBytes`. */
export function readAnswer(body: Readable, where: Where, status: number, limits: AnswerLimits): Promise<string> {
  return readBounded(
    body,
    limits.maxAnswerBytes,
    () =>
      new AnswerLimitError(
        where,
        status,
        'maxAnswerBytes',
        `the answer is larger than ${formatBytes(limits.maxAnswerBytes)} (${LIMIT_OPTIONS.maxAnswerBytes}); it was not read further`,
      ),
  );
}

/**
 * One attempt's wall-clock limit: `signal` aborts when the caller's does, or when `ms` have passed. `error` is set
 * once the time ran out (then the attempt's failure is this, not the transport's complaint about the abort).
 * `clear(done)` must be called when the attempt returns: it stops the clock, so that a streamed body handed on is
 * not cut later; `done` (the body was read or released) also stops following the caller's signal, which a body
 * still to be read must keep following (the caller cancels it with that signal).
 */
export interface CallDeadline {
  readonly signal: AbortSignal;
  error(): AnswerLimitError | undefined;
  clear(done: boolean): void;
}

export function callDeadline(where: Where, ms: number, callerSignal?: AbortSignal): CallDeadline {
  const own = new AbortController();
  let expired: AnswerLimitError | undefined;
  const timer = setTimeout(() => {
    expired = new AnswerLimitError(
      where,
      0,
      'callTimeoutMs',
      `no complete answer within ${formatDuration(ms)} (${LIMIT_OPTIONS.callTimeoutMs}); the call was abandoned`,
    );
    own.abort(expired);
  }, ms);
  // Forwarded by hand rather than with AbortSignal.any: the listener goes when the attempt ends, so thousands of
  // calls under one run's signal leave nothing behind on it.
  const forward = (): void => own.abort(callerSignal!.reason);
  if (callerSignal?.aborted) forward();
  else callerSignal?.addEventListener('abort', forward, { once: true });
  return {
    signal: own.signal,
    error: () => expired,
    clear: (done) => {
      clearTimeout(timer);
      if (done) callerSignal?.removeEventListener('abort', forward);
    },
  };
}
