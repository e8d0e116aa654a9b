/**
 * What the client's HTTP tests (http-*.test.ts) share: a client that records its retries, the real emulator with
 * fault injection, and small scripted node:http servers for response shapes the emulator never produces. Everything
 * they start is closed after each test by `closeAfterEach`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { createClient, type ClientOptions, type ServiceClient } from '../../src/client/index.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

export const KEY = 'emulator-key';
export type RetryInfo = Parameters<NonNullable<ClientOptions['onRetry']>>[0];

const cleanups: (() => Promise<void>)[] = [];

/** Closes, after each test of the calling file, every client and server the helpers started (last first). */
export function closeAfterEach(): void {
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
}

export function client(baseUrl: string, opts: Partial<ClientOptions> = {}): { c: ServiceClient; retries: RetryInfo[] } {
  const retries: RetryInfo[] = [];
  const c = createClient({
    baseUrl,
    apiKey: KEY,
    retry: { retries: 5, baseDelayMs: 10, maxDelayMs: 1_000 },
    onRetry: (i) => retries.push(i),
    ...opts,
  });
  cleanups.push(() => c.close());
  return { c, retries };
}

export async function emulator(faults?: unknown): Promise<EmulatorHandle> {
  const e = await startEmulator({ seed: 2, faults });
  cleanups.push(() => e.close());
  return e;
}

/** One fault rule on one route: `n` faults of `kind`, then normal answers. */
export function faultsOn(route: string, kind: string, n: number, extra: Record<string, unknown> = {}): unknown {
  return { rules: [{ route, rate: 1, faults: { [kind]: 1 }, max_per_route: n, ...extra }] };
}

export const COUNTRIES = 'GET /countrieslist';

export type Script = (req: IncomingMessage, res: ServerResponse, hit: number, body: string) => void | Promise<void>;

/** A real HTTP server answering by script; `hits` lists `METHOD path` of every request it received. */
export async function scripted(script: Script, port = 0): Promise<{ url: string; hits: string[]; server: Server }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push(`${req.method} ${req.url}`);
      void Promise.resolve(script(req, res, hits.length, Buffer.concat(chunks).toString())).catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, server };
}

export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const type = typeof body === 'string' ? 'text/html; charset=utf-8' : 'application/json';
  res.writeHead(status, { 'content-type': type, ...headers });
  res.end(text);
}

/** Drops the connection after the request arrived, without any answer. */
export function reset(res: ServerResponse): void {
  res.socket?.destroy();
}
