/**
 * The one retry policy: which failures are worth another try (each error says so itself, typed where it happened)
 * and how long to wait first. The codes and messages the engine once matched on are each typed at a boundary now:
 * the table at the end shows where, through that boundary's own code.
 */
import { describe, expect, it } from 'vitest';
import { AmbiguousPaidCallError, NotReadyError, ServiceError, networkFailure } from '../../src/client/errors.js';
import { transportFailure } from '../../src/client/network.js';
import { DecodeError, NetworkError, SluiceError, TransientError } from '../../src/core/errors.js';
import {
  RetryPolicy,
  isTransient,
  markRetriesSpent,
  notYet,
  pollUntil,
  retryAfterOf,
  retryableStatus,
  retrying,
} from '../../src/core/retry.js';
import { decodeError, gzip } from '../decode/helpers.js';

const answer = (status: number, extra: { retryAfterMs?: number } = {}): ServiceError =>
  new ServiceError({ method: 'GET', path: '/x', status, serviceMessage: 'no', ...extra });
const coded = (code: string, message = code): Error => Object.assign(new Error(message), { code });

describe('retryableStatus', () => {
  it('asks again on 429 and 5xx only', () => {
    for (const s of [429, 500, 502, 503, 504, 599]) expect(retryableStatus(s), String(s)).toBe(true);
    for (const s of [200, 202, 400, 401, 402, 403, 404, 409, 422]) expect(retryableStatus(s), String(s)).toBe(false);
  });
});

describe('isTransient', () => {
  it('retries the network, 429, 5xx and short or corrupt bytes; not 4xx, config errors or paid calls', () => {
    expect(isTransient(answer(503))).toBe(true);
    expect(isTransient(answer(429))).toBe(true);
    expect(
      isTransient(networkFailure({ method: 'GET', path: '/x' }, transportFailure(coded('ECONNRESET'), 'request'))),
    ).toBe(true);
    expect(isTransient(new NetworkError('reset', { code: 'ECONNRESET', sent: true }))).toBe(true);
    expect(isTransient(new DecodeError('u', 5, 'truncated gzip'))).toBe(true);
    expect(isTransient(new TransientError('busy'))).toBe(true);
    expect(isTransient(answer(400))).toBe(false);
    expect(isTransient(answer(404))).toBe(false);
    expect(isTransient(new NotReadyError({ method: 'GET', path: '/x', serviceMessage: 'building' }))).toBe(true);
    // 202 while the caller still waits is worth asking again; the error it finally gives up with is not.
    expect(isTransient(new NotReadyError({ method: 'GET', path: '/x', final: true, serviceMessage: 'building' }))).toBe(
      false,
    );
    expect(isTransient(new SluiceError('bad config'))).toBe(false);
    // A paid call that may have started its job is never repeated automatically, whatever its status.
    for (const status of [0, 500, 502])
      expect(
        isTransient(new AmbiguousPaidCallError({ method: 'POST', path: '/x', status, serviceMessage: 'lost' })),
      ).toBe(false);
  });

  it('follows the cause chain to the first error that classified itself', () => {
    const reset = new NetworkError('reset', { code: 'UND_ERR_SOCKET', sent: true });
    expect(isTransient(new Error('wrapper', { cause: reset }))).toBe(true);
    expect(isTransient(new SluiceError('unit u failed', { cause: new Error('mid', { cause: reset }) }))).toBe(true);
    // The nearest classification wins: a terminal wrapper of a transient failure stays terminal.
    const lost = new AmbiguousPaidCallError({
      method: 'POST',
      path: '/x',
      status: 500,
      serviceMessage: 'lost',
      cause: answer(500),
    });
    expect(isTransient(new SluiceError('lost trigger', { cause: lost }))).toBe(false);
  });

  it('an error nobody classified is terminal, whatever its code, status or message says', () => {
    expect(isTransient(new Error('x'))).toBe(false);
    expect(isTransient(coded('ECONNRESET'))).toBe(false);
    expect(isTransient(Object.assign(new Error('x'), { status: 503 }))).toBe(false);
    expect(isTransient(new Error('terminated'))).toBe(false);
    expect(isTransient(new Error('other side closed'))).toBe(false);
    expect(isTransient(undefined)).toBe(false);
    expect(isTransient('ECONNRESET')).toBe(false);
  });
});

describe('retryAfterOf', () => {
  it("is the service's Retry-After, found along the cause chain", () => {
    expect(retryAfterOf(answer(429, { retryAfterMs: 7_000 }))).toBe(7_000);
    expect(retryAfterOf(new SluiceError('page', { cause: answer(429, { retryAfterMs: 0 }) }))).toBe(0);
    expect(retryAfterOf(answer(503))).toBeUndefined();
    expect(retryAfterOf(new Error('x'))).toBeUndefined();
  });
});

describe('RetryPolicy', () => {
  const policy = (random: () => number): RetryPolicy =>
    new RetryPolicy({ attempts: 4, baseMs: 100, maxMs: 1_000, random });

  it('tries `attempts` times in all, and only transient failures', () => {
    const p = policy(Math.random);
    expect([1, 2, 3, 4].map((a) => p.shouldRetry(a, answer(503)))).toEqual([true, true, true, false]);
    expect(p.shouldRetry(1, answer(400))).toBe(false);
    expect(p.shouldRetry(1, new Error('unknown'))).toBe(false);
  });

  it('backs off from baseMs, doubling, capped at maxMs, with jitter between half and all of it', () => {
    expect([1, 2, 3, 4, 5].map((a) => policy(() => 0).delayMs(a))).toEqual([50, 100, 200, 400, 500]);
    expect([1, 2, 3, 4, 5].map((a) => policy(() => 1).delayMs(a))).toEqual([100, 200, 400, 800, 1_000]);
    expect(policy(() => 0.5).delayMs(1, answer(503))).toBe(75);
  });

  it("waits the service's Retry-After instead, capped at maxMs", () => {
    const p = policy(() => 0);
    expect(p.delayMs(1, answer(429, { retryAfterMs: 700 }))).toBe(700);
    expect(p.delayMs(3, answer(429, { retryAfterMs: 0 }))).toBe(0);
    expect(p.delayMs(1, answer(429, { retryAfterMs: 3_600_000 }))).toBe(1_000);
  });
});

describe('retrying', () => {
  const fast = new RetryPolicy({ attempts: 3, baseMs: 1, maxMs: 1 });

  it('tries again while the policy allows, telling each retry, and gives up with the last error', async () => {
    const errs = [answer(503), answer(502), answer(500)];
    const told: [number, number][] = [];
    const err = await retrying(
      async (attempt) => {
        throw errs[attempt - 1];
      },
      { policy: fast, onRetry: (attempt, e) => told.push([attempt, (e as ServiceError).status]) },
    ).catch((e: unknown) => e);
    expect(err).toBe(errs[2]);
    expect(told).toEqual([
      [1, 503],
      [2, 502],
    ]);
    await expect(retrying(async () => Promise.reject(answer(404)), { policy: fast })).rejects.toMatchObject({
      status: 404,
    });
  });

  it('a decision of its own: the wait it returns, or the error it throws in place of the failure', async () => {
    let tries = 0;
    const replaced = new SluiceError('said better');
    const err = await retrying(
      async () => {
        tries++;
        throw answer(400);
      },
      {
        policy: fast,
        next: (attempt) => {
          if (attempt < 2) return 0;
          throw replaced;
        },
      },
    ).catch((e: unknown) => e);
    expect([tries, err]).toEqual([2, replaced]);
  });

  it('a failure retried to the end where it happened is not retried again above it (one budget per cause)', () => {
    const unit = new RetryPolicy({ attempts: 4, baseMs: 1, maxMs: 1 });
    const spent = markRetriesSpent(answer(503));
    expect(unit.shouldRetry(1, spent)).toBe(false);
    expect(unit.shouldRetry(1, new SluiceError('unit u failed', { cause: spent }))).toBe(false);
    // Only that error: the same cause seen fresh, or bytes cut short, are still the unit's to retry.
    expect(unit.shouldRetry(1, answer(503))).toBe(true);
    expect(unit.shouldRetry(1, new DecodeError('u', 5, 'truncated gzip', spent))).toBe(true);
  });
});

describe('pollUntil', () => {
  const gentle = new RetryPolicy({ attempts: Number.MAX_SAFE_INTEGER, baseMs: 1, maxMs: 5, random: () => 1 });

  it("asks until the answer is no `notYet`, waiting the other side's Retry-After when it gives one", async () => {
    const waits: number[] = [];
    const answers = [notYet(), notYet(3), 'done'];
    const got = await pollUntil(async (n) => answers[n - 1]!, {
      policy: gentle,
      timeoutMs: 10_000,
      timedOut: () => new Error('late'),
      onWait: (_n, ms) => waits.push(ms),
    });
    expect(got).toBe('done');
    expect(waits).toEqual([1, 3]);
  });

  it('gives up with its own error rather than start a wait that would end past the time allowed', async () => {
    let asks = 0;
    const late = new SluiceError('still building');
    const err = await pollUntil(async () => (asks++, notYet(30_000)), {
      policy: new RetryPolicy({ attempts: Number.MAX_SAFE_INTEGER, baseMs: 1, maxMs: 60_000 }),
      timeoutMs: 1_000,
      timedOut: () => late,
    }).catch((e: unknown) => e);
    expect([asks, err]).toEqual([1, late]);
  });

  it('without time allowed, the first "not yet" is the answer, even one asking to wait 0 ms', async () => {
    let asks = 0;
    const late = new SluiceError('not ready');
    const err = await pollUntil(async () => (asks++, notYet(0)), {
      policy: gentle,
      timeoutMs: 0,
      timedOut: () => late,
    }).catch((e: unknown) => e);
    expect([asks, err]).toEqual([1, late]);
  });
});

/**
 * Every code the engine once matched by name, and the boundary that now types it. Each row goes through that
 * boundary's code and checks that what comes out is transient (the raw error is not: see above).
 */
describe('where each formerly matched code is typed now', () => {
  const where = { method: 'GET', path: '/datasets/snapshots/s/download' };

  // client/http.ts → client/network.ts `transportFailure`: what undici throws making a request or reading a body.
  it.each([
    ['ECONNRESET', 'request'],
    ['ECONNREFUSED', 'request'],
    ['EPIPE', 'request'],
    ['ETIMEDOUT', 'request'],
    ['UND_ERR_SOCKET', 'body'],
    ['UND_ERR_CONNECT_TIMEOUT', 'request'],
    ['UND_ERR_HEADERS_TIMEOUT', 'request'],
    ['UND_ERR_BODY_TIMEOUT', 'body'],
    ['UND_ERR_ABORTED', 'body'],
    ['ERR_STREAM_PREMATURE_CLOSE', 'body'],
  ] as const)('%s (transport, %s): a NetworkError inside a status-0 ServiceError', (code, phase) => {
    const raw = coded(code);
    const err = networkFailure(where, transportFailure(raw, phase));
    expect(err.cause).toBeInstanceOf(NetworkError);
    expect((err.cause as NetworkError).code).toBe(code);
    expect(isTransient(err)).toBe(true);
    expect(isTransient(raw)).toBe(false);
  });

  // undici's messages 'terminated' and 'other side closed' come with a socket error code on the error or its cause.
  it.each([
    ['terminated', new TypeError('terminated', { cause: coded('UND_ERR_SOCKET', 'other side closed') })],
    ['other side closed', coded('UND_ERR_SOCKET', 'other side closed')],
  ])("undici's %s: typed by the body guard, not by its message", (_m, raw) => {
    expect(isTransient(networkFailure(where, transportFailure(raw, 'body')))).toBe(true);
  });

  // decode/gunzip.ts `zlibError`: zlib's failures on real truncated and corrupt gzip input.
  it('Z_BUF_ERROR (truncated gzip) and Z_DATA_ERROR (corrupt gzip): DecodeError', async () => {
    const whole = gzip('{"a":1}\n'.repeat(5_000));
    const corrupt = Buffer.from(whole);
    corrupt.fill(0x55, 20, 60);
    for (const [input, code] of [
      [whole.subarray(0, whole.length >> 1), 'Z_BUF_ERROR'],
      [corrupt, 'Z_DATA_ERROR'],
    ] as const) {
      const err = await decodeError(input, { format: 'jsonl' });
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as DecodeError).cause).toMatchObject({ code });
      expect(isTransient(err)).toBe(true);
    }
  });
});
