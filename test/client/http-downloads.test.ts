/**
 * Downloads are streams: the first bytes arrive while the server still writes, and a body that breaks midway is a
 * transient error that says the request was sent.
 */
import { type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ServiceError, type ServiceClient } from '../../src/client/index.js';
import { NetworkError } from '../../src/core/errors.js';
import { isTransient } from '../../src/core/retry.js';

import { client, closeAfterEach, reset, scripted } from './http-helpers.js';

closeAfterEach();

describe('downloads are streams', () => {
  /** Sends a first piece, then holds the rest back until the client has seen that piece (or 3 s passed). */
  async function holdingServer(): Promise<{ url: string; firstSeenBeforeEnd: () => boolean; seen: () => void }> {
    let seen!: () => void;
    const clientSaw = new Promise<void>((r) => (seen = r));
    let sawBeforeEnd = false;
    const s = await scripted(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/jsonl' });
      res.write(`${JSON.stringify({ i: 0, pad: 'x'.repeat(1000) })}\n`);
      const waited = await Promise.race([
        clientSaw.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 3_000)),
      ]);
      sawBeforeEnd = waited;
      // The rest: 8 MB that would have to sit in memory if the client buffered.
      const line = `${JSON.stringify({ i: 1, pad: 'y'.repeat(8_000) })}\n`;
      for (let i = 0; i < 1_000; i++) if (!res.write(line)) await new Promise((r) => res.once('drain', r));
      res.end();
    });
    return { url: s.url, firstSeenBeforeEnd: () => sawBeforeEnd, seen: () => seen() };
  }

  it.each([
    ['snapshot download', (c: ServiceClient) => c.datasets.download('snap_x', { format: 'jsonl' })],
    ['deep lookup download', (c: ServiceClient) => c.deepLookup.download('ai_x', 'json')],
  ])('%s: the first bytes arrive while the server is still writing', async (_name, start) => {
    const h = await holdingServer();
    const { c } = client(h.url);
    const dl = await start(c);
    expect(dl.status).toBe(200);
    let bytes = 0;
    for await (const chunk of dl.body as AsyncIterable<Buffer>) {
      if (bytes === 0) h.seen();
      bytes += chunk.length;
    }
    expect(h.firstSeenBeforeEnd()).toBe(true);
    expect(bytes).toBeGreaterThan(8_000_000);
  });
});

describe('a download that breaks while its body streams', () => {
  /** Writes a first piece of the body, then `then` (drops the connection, or goes silent). */
  async function cutting(then: (res: ServerResponse) => void): Promise<string> {
    const s = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/jsonl' });
      res.write('{"a":1}\n'.repeat(1000), () => setTimeout(() => then(res), 20));
    });
    return s.url;
  }

  async function readAll(body: AsyncIterable<Buffer>): Promise<{ bytes: number; error: unknown }> {
    let bytes = 0;
    try {
      for await (const c of body) bytes += c.length;
    } catch (error) {
      return { bytes, error };
    }
    throw new Error('the body did not fail');
  }

  it.each([
    ['the connection is dropped', 'UND_ERR_SOCKET', reset, {}],
    ['the server goes silent past the body timeout', 'UND_ERR_BODY_TIMEOUT', () => undefined, { body: 150 }],
  ])('%s: a transient ServiceError (status 0) whose cause is a NetworkError, sent', async (_n, code, then, t) => {
    const { c } = client(await cutting(then), { timeouts: t });
    const dl = await c.datasets.download('snap_x', { format: 'jsonl' });
    const { bytes, error } = await readAll(dl.body as AsyncIterable<Buffer>);
    expect(bytes).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 0, transient: true, sent: true });
    expect((error as ServiceError).cause).toBeInstanceOf(NetworkError);
    expect((error as ServiceError).cause).toMatchObject({ code, sent: true });
    expect((error as ServiceError).hint).toMatch(/connection to the service broke/);
    expect(isTransient(error)).toBe(true);
  });

  it('no answer before the headers timeout: retried, then a transient error that may have been sent', async () => {
    const s = await scripted(() => undefined);
    const { c, retries } = client(s.url, {
      timeouts: { headers: 100 },
      retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 },
    });
    const err = (await c.datasets.list().catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 0, transient: true, sent: true });
    expect(err.cause).toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(retries).toHaveLength(1);
    expect(s.hits).toHaveLength(2);
  });
});
