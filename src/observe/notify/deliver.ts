/**
 * One POST to a webhook, tried again under the retry policy (core/retry.ts) on a network error, a 429 (its
 * Retry-After honoured) or a 5xx, never on another 4xx; each attempt bounded by a timeout. It never throws: a
 * notification that cannot be delivered is a warning in the log, naming the webhook, never its URL.
 */
import { request } from 'undici';
import { SluiceError, TransientError } from '../../core/errors.js';
import { RetryPolicy, retrying } from '../../core/retry.js';
import { redact } from '../../core/redact.js';
import type { Logger } from '../../core/types.js';

export interface Delivery {
  /** The webhook's name for logs. */
  label: string;
  url: string;
  headers?: Record<string, string>;
  body: unknown;
}

export interface DeliveryOptions {
  timeoutMs: number;
  retries: number;
  log: Logger;
  /** First backoff (default 500 ms); waits are capped at 5 s so an unreachable receiver costs seconds, not minutes. */
  baseDelayMs?: number;
}

/** Whether the webhook accepted the notification (a 2xx). */
export async function deliver(d: Delivery, opts: DeliveryOptions): Promise<boolean> {
  const policy = new RetryPolicy({ attempts: opts.retries + 1, baseMs: opts.baseDelayMs ?? 500, maxMs: 5_000 });
  let tries = 0;
  try {
    await retrying((attempt) => ((tries = attempt), post(d, opts.timeoutMs)), { policy });
    return true;
  } catch (err) {
    opts.log.warn(
      `notification to ${d.label} not delivered after ${tries} attempt(s): ${redact((err as Error).message)}`,
    );
    return false;
  }
}

async function post(d: Delivery, timeoutMs: number): Promise<void> {
  let res;
  try {
    res = await request(d.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'sluice', ...d.headers },
      body: JSON.stringify(d.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as Error & { code?: string };
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.code ?? e.message);
    throw new TransientError(`network: ${why}`, { cause: err });
  }
  await res.body.text().catch(() => '');
  if (res.statusCode >= 200 && res.statusCode < 300) return;
  const message = `HTTP ${res.statusCode}`;
  if (res.statusCode === 429 || res.statusCode >= 500) {
    const retryAfter = Number(res.headers['retry-after']);
    throw new TransientError(message, Number.isFinite(retryAfter) ? { retryAfterMs: retryAfter * 1000 } : {});
  }
  throw new SluiceError(message);
}
