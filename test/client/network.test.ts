/**
 * The client's transport boundary: socket errors become `NetworkError` (with whether the request may have been
 * sent), and a streamed body's failures are turned into the client's error whatever way the stream broke.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/core/errors.js';
import { isTransient } from '../../src/core/retry.js';
import { guardedBody, transportFailure } from '../../src/client/network.js';

const coded = (code: string, message = code): Error => Object.assign(new Error(message), { code });

describe('transportFailure', () => {
  it.each(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])(
    '%s before an answer: never sent (a paid call may be made again)',
    (code) => {
      const e = transportFailure(coded(code), 'request');
      expect(e).toBeInstanceOf(NetworkError);
      expect(e).toMatchObject({ code, sent: false, transient: true });
    },
  );

  it.each(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT', undefined])(
    '%s before an answer: may have been sent',
    (code) => {
      const e = transportFailure(code === undefined ? new Error('socket hang up') : coded(code), 'request');
      expect(e).toMatchObject({ sent: true, transient: true });
      expect(e.code).toBe(code);
    },
  );

  it('while the body is read, the request was sent whatever the code', () => {
    expect(transportFailure(coded('ECONNREFUSED'), 'body').sent).toBe(true);
  });

  it("reads undici's code from the cause (fetch's TypeError 'terminated' carries the socket error there)", () => {
    const terminated = new TypeError('terminated', { cause: coded('UND_ERR_SOCKET', 'other side closed') });
    const e = transportFailure(terminated, 'body');
    expect(e.code).toBe('UND_ERR_SOCKET');
    expect(e.cause).toBe(terminated);
  });

  it('keeps a NetworkError as it is', () => {
    const e = new NetworkError('x', { sent: false });
    expect(transportFailure(e, 'body')).toBe(e);
  });
});

describe('guardedBody', () => {
  const fail = (e: unknown): Error => transportFailure(e, 'body');

  async function consume(body: Readable): Promise<{ text: string; error?: unknown }> {
    let text = '';
    try {
      for await (const c of body as AsyncIterable<Buffer>) text += c.toString();
    } catch (error) {
      return { text, error };
    }
    return { text };
  }

  it('passes every byte of a body that ends', async () => {
    const out = await consume(guardedBody(Readable.from([Buffer.from('a'), Buffer.from('bc')]), fail));
    expect(out).toEqual({ text: 'abc' });
  });

  it('turns an error of the body into the client error, after the bytes that arrived', async () => {
    const body = new Readable({ read() {} });
    body.push('ab');
    setImmediate(() => body.destroy(coded('ECONNRESET', 'read ECONNRESET')));
    const out = await consume(guardedBody(body, fail));
    expect(out.text).toBe('ab');
    expect(out.error).toBeInstanceOf(NetworkError);
    expect(out.error).toMatchObject({ code: 'ECONNRESET', sent: true });
    expect(isTransient(out.error)).toBe(true);
  });

  it('a body closed before its end (no error of its own) is a network failure too', async () => {
    const body = new Readable({ read() {} });
    body.push('ab');
    setImmediate(() => body.destroy());
    const out = await consume(guardedBody(body, fail));
    expect(out.error).toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE', sent: true });
    expect(isTransient(out.error)).toBe(true);
  });

  it('a consumer that stops early releases the body, and its own error stays its own', async () => {
    const body = new Readable({ read() {} });
    body.push('ab');
    const guarded = guardedBody(body, fail);
    for await (const _ of guarded as AsyncIterable<Buffer>) break;
    expect(body.destroyed).toBe(true);

    const other = new Readable({ read() {} });
    const mine = new Error('disk full');
    const g2 = guardedBody(other, fail);
    g2.destroy(mine);
    expect((await consume(g2)).error).toBe(mine);
    expect(other.destroyed).toBe(true);
  });
});
