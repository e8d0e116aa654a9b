/**
 * A service never reached fails fast with `cannot reach <url>` after a few quick tries (a wrong base_url, a service
 * that is down), survives a short blip at the start, and once it has answered, refused connections get the full
 * retry policy again. Real sockets on 127.0.0.1: a port nothing listens on refuses the connection.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceError, UnreachableServiceError, createClient, type ServiceClient } from '../../src/client/index.js';
import {
  FIRST_CONTACT_ATTEMPTS,
  firstContactPolicy,
  withinFirstContactBudget,
} from '../../src/client/first-contact.js';
import { isTransient, RetryPolicy } from '../../src/core/retry.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function client(baseUrl: string, onRetry: () => void = () => undefined): ServiceClient {
  const c = createClient({
    baseUrl,
    apiKey: 'k',
    retry: { retries: 7, baseDelayMs: 1, maxDelayMs: 5 },
    onRetry,
  });
  cleanups.push(() => c.close());
  return c;
}

function answering(port = 0): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ zone_types: {} }));
  });
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return new Promise((r) => server.listen(port, '127.0.0.1', () => r(server)));
}

/** A port that was free a moment ago: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('first contact with the service', () => {
  it('a refused connection fails with `cannot reach <url>` after a few tries, not the full policy', async () => {
    const port = await closedPort();
    let retries = 0;
    const err = await client(`http://127.0.0.1:${port}`, () => retries++)
      .zones.countries()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableServiceError);
    const e = err as UnreachableServiceError;
    expect(e.message).toMatch(new RegExp(`^cannot reach http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    expect(e.hint).toContain('service.base_url');
    expect(e.hint).toContain('nothing was paid');
    expect(e.sent).toBe(false);
    // Terminal: the engine must not retry the unit (each retry would make the same tries again).
    expect(isTransient(e)).toBe(false);
    expect(retries).toBe(FIRST_CONTACT_ATTEMPTS - 1);
  });

  it('an unknown host fails the same way', async () => {
    const err = await client('http://sluice-no-such-host.invalid')
      .zones.countries()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableServiceError);
    expect((err as Error).message).toMatch(/^cannot reach http:\/\/sluice-no-such-host\.invalid: /);
  });

  it('a service that comes up during the first tries (a blip at the start of a nightly run) is used', async () => {
    const port = await closedPort();
    let retries = 0;
    const c = client(`http://127.0.0.1:${port}`, () => {
      // The service comes back while the client waits before its second try.
      if (retries++ === 0) void answering(port);
    });
    await expect(c.zones.countries()).resolves.toEqual({ zone_types: {} });
    expect(retries).toBeGreaterThanOrEqual(1);
  });

  it('once the service has answered, refused connections get the full retry policy', async () => {
    const server = await answering();
    const { port } = server.address() as AddressInfo;
    let retries = 0;
    const c = client(`http://127.0.0.1:${port}`, () => retries++);
    await c.zones.countries();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    const err = await c.zones.countries().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).not.toBeInstanceOf(UnreachableServiceError);
    expect((err as ServiceError).status).toBe(0);
    expect(isTransient(err)).toBe(true);
    expect(retries).toBe(7);
  });

  it('never allows more tries or longer waits than the client’s own policy', () => {
    const own = new RetryPolicy({ attempts: 3, baseMs: 100, maxMs: 200, random: () => 1 });
    const first = firstContactPolicy(own);
    expect(first.attempts).toBe(3);
    expect(first.maxMs).toBe(200);
    const generous = firstContactPolicy(new RetryPolicy({ attempts: 21, baseMs: 500, maxMs: 30_000 }));
    expect(generous.attempts).toBe(FIRST_CONTACT_ATTEMPTS);
    expect(generous.maxMs).toBeLessThan(30_000);
    expect(withinFirstContactBudget(7_000, 500)).toBe(true);
    expect(withinFirstContactBudget(7_000, 2_000)).toBe(false);
  });
});
