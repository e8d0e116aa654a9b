/**
 * One POST to a webhook, tried again under the retry policy (core/retry.ts) on a network error, a 429 (its
 * Retry-After honoured, capped by the policy) or a 5xx, never on another 4xx; each attempt bounded by a timeout that covers
 * the answer too, the answer read to a few KiB (outbound.ts). The whole delivery is bounded: (retries + 1) × timeout
 * plus waits of at most 5 s each. It never throws: it says why a notification was not delivered, and the notifier
 * warns once per webhook and run.
 */
import { SluiceError, TransientError } from '../../core/errors.js';
import { RetryPolicy, retrying } from '../../core/retry.js';
import type { Destination } from '../outbound.js';
import { answerExcerpt, post } from '../outbound.js';

/** The longest wait between attempts: an unreachable receiver costs seconds, not minutes. */
const MAX_WAIT_MS = 5_000;

export interface Delivery {
  to: Destination;
  headers?: Record<string, string>;
  /** The JSON body, already redacted and escaped for its format (message.ts). */
  body: unknown;
}

export interface DeliveryOptions {
  timeoutMs: number;
  retries: number;
  /** First backoff (default 500 ms). */
  baseDelayMs?: number;
}

/** Undefined when the webhook accepted the notification (a 2xx); else why not, after how many attempts. */
export async function deliver(d: Delivery, opts: DeliveryOptions): Promise<string | undefined> {
  const policy = new RetryPolicy({ attempts: opts.retries + 1, baseMs: opts.baseDelayMs ?? 500, maxMs: MAX_WAIT_MS });
  let tries = 0;
  try {
    await retrying((attempt) => ((tries = attempt), attemptOnce(d, opts.timeoutMs)), { policy });
    return undefined;
  } catch (err) {
    return `not delivered after ${tries} attempt(s): ${(err as Error).message}`;
  }
}

async function attemptOnce(d: Delivery, timeoutMs: number): Promise<void> {
  let answer;
  try {
    answer = await post(d.to, {
      headers: { 'content-type': 'application/json', ...d.headers },
      body: JSON.stringify(d.body),
      timeoutMs,
    });
  } catch (err) {
    throw new TransientError(`network: ${(err as Error).message}`, { cause: err });
  }
  const { status } = answer;
  if (status >= 200 && status < 300) return;
  const excerpt = answerExcerpt(answer.text);
  const message = `HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`;
  if (status === 429 || status >= 500) {
    const retryAfter = Number(answer.headers['retry-after']);
    throw new TransientError(message, Number.isFinite(retryAfter) ? { retryAfterMs: retryAfter * 1000 } : {});
  }
  throw new SluiceError(message);
}
