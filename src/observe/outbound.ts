/**
 * Where a run's telemetry goes (webhooks, the Pushgateway) and how it is sent, trusting nothing of the far end:
 *
 * - the URL is parsed once: credentials in it (`https://user:pass@host/…`) are sent as the URL means them, as HTTP
 *   basic auth, never dropped; every secret part of it (the password, a token in the query, a webhook's path) is
 *   registered with the one redaction point, and messages name the destination by `display`, secrets masked;
 * - an answer is read to ANSWER_LIMIT_BYTES at most (enough for an error message), then the connection is dropped:
 *   a receiver answering a gigabyte costs a few kilobytes;
 * - every request is bounded in time by the caller's signal, which covers the answer's body too.
 */
import { request } from 'undici';
import { registerSecret } from '../core/redact.js';

/** What is kept of an answer: an error message's worth. */
export const ANSWER_LIMIT_BYTES = 4096;

export interface Destination {
  /** The URL to send to, without its credentials. */
  url: URL;
  /** `authorization: Basic …` when the URL carried `user:password@`. */
  headers: Record<string, string>;
  /** The URL for messages: its credentials, query values (and, for a webhook, its path) masked. */
  display: string;
}

/**
 * `raw` as a destination (an http(s) URL; the config checked that). `secretPath`: the path is a credential too, as a
 * Slack or Teams webhook's is.
 */
export function destination(raw: string, opts: { secretPath?: boolean } = {}): Destination {
  // A webhook's URL is a credential as a whole; a gateway's only in its parts (named below), so it can be shown.
  if (opts.secretPath) registerSecret(raw);
  const url = new URL(raw);
  const headers: Record<string, string> = {};
  if (url.username !== '' || url.password !== '') {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    // A userinfo without a password is a token (`https://TOKEN@host`): both are secrets either way.
    for (const s of [url.username, user, url.password, password]) registerSecret(s);
    const basic = Buffer.from(`${user}:${password}`).toString('base64');
    registerSecret(basic);
    headers.authorization = `Basic ${basic}`;
    url.username = '';
    url.password = '';
  }
  for (const [, value] of url.searchParams) registerSecret(value);
  if (opts.secretPath && url.pathname.length > 1) registerSecret(url.pathname);
  const query = [...url.searchParams.keys()].map((k) => `${k}=***`).join('&');
  const shownPath = opts.secretPath && url.pathname.length > 1 ? '/***' : url.pathname;
  const display = `${url.protocol}//${headers.authorization ? '***@' : ''}${url.host}${shownPath}${query ? `?${query}` : ''}`;
  return { url, headers, display };
}

/** `dest` with `suffix` appended to its path, its query kept after it (`http://gw/?t=1` + `/metrics/…`). */
export function withPath(dest: Destination, suffix: string): Destination {
  const url = new URL(dest.url);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${suffix}`;
  return { ...dest, url };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** At most ANSWER_LIMIT_BYTES of the body, as text. */
  text: string;
}

/** Why a request got no answer, in a few words (`ECONNREFUSED`, `no answer within 5000 ms`). */
export class NoAnswer extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'NoAnswer';
  }
}

interface SendInit {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** One POST to `dest`, its answer read to ANSWER_LIMIT_BYTES; throws NoAnswer when none came within `timeoutMs`. */
export function post(dest: Destination, init: SendInit): Promise<Answer> {
  return send('POST', dest, init);
}

/** One PUT to `dest` (a Pushgateway group replaced whole), as `post`. */
export function put(dest: Destination, init: SendInit): Promise<Answer> {
  return send('PUT', dest, init);
}

async function send(method: 'POST' | 'PUT', dest: Destination, init: SendInit): Promise<Answer> {
  const signal = init.signal
    ? AbortSignal.any([init.signal, AbortSignal.timeout(init.timeoutMs)])
    : AbortSignal.timeout(init.timeoutMs);
  try {
    const res = await request(dest.url, {
      method,
      headers: { 'user-agent': 'sluice', ...init.headers, ...dest.headers },
      body: init.body,
      signal,
    });
    return { status: res.statusCode, headers: res.headers, text: await readBounded(res.body) };
  } catch (err) {
    throw new NoAnswer(noAnswerText(err, init.timeoutMs, init.signal), { cause: err });
  }
}

/** Up to ANSWER_LIMIT_BYTES of `body`; the rest is never read (leaving the loop destroys the stream and its socket). */
async function readBounded(body: AsyncIterable<unknown> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const b = chunk as Buffer;
      chunks.push(b.subarray(0, ANSWER_LIMIT_BYTES - size));
      size += b.length;
      if (size >= ANSWER_LIMIT_BYTES) break;
    }
  } catch {
    // An answer cut short (a timeout mid-body, a reset) is still an answer: its status is what counts.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

function noAnswerText(err: unknown, timeoutMs: number, callerSignal: AbortSignal | undefined): string {
  const e = err as Error & { code?: string; cause?: { code?: string } };
  if (callerSignal?.aborted) return 'abandoned for a newer report';
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  return e.code ?? e.cause?.code ?? e.message;
}

/** The first line of an answer's text, short enough for a log line. */
export function answerExcerpt(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
