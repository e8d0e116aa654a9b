/**
 * The service side of end-to-end tests: the emulator, its API as a client with the key sees it, and a recording
 * proxy in front of it that can hold or answer chosen requests (the SERP crawl that tests hold mid-run).
 */
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server.js';
import type { EmulatorOptions } from '../../../src/emulator/context.js';
import { API_KEY, type Obj } from './workspace.js';

/** An emulator on 127.0.0.1:0 with the e2e key; small data and fast emulated time unless told otherwise. */
export function emulator(opts: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  return startEmulator({ apiKey: API_KEY, size: 3000, timeScale: 50, ...opts });
}

/** What the account paid for (`GET /_emulator/counters`): paid operations by kind, pages billed, records charged. */
export interface EmulatorBill {
  paid: Record<string, number>;
  requests: number;
  records_charged: number;
}

export async function emulatorBill(emu: { url: string }): Promise<EmulatorBill> {
  return (await (await fetch(`${emu.url}/_emulator/counters`)).json()) as EmulatorBill;
}

/** Moves the emulator's clock to `at` (ms since the epoch): the next emulated night. */
export async function moveClock(emu: { url: string }, at: number): Promise<void> {
  const res = await fetch(`${emu.url}/_emulator/clock`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ now: new Date(at).toISOString() }),
  });
  expect(res.status).toBe(200);
}

/** JSON from the emulator, as a client with the key would get it. */
export async function api(emu: { url: string }, method: string, urlPath: string, body?: unknown): Promise<any> {
  const res = await fetch(`${emu.url}${urlPath}`, {
    method,
    headers: {
      authorization: `Bearer ${API_KEY}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${urlPath}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** What the emulator counted of its answers of 429 for one client IP (`GET /_emulator/ip-block`). */
export interface Ip429 {
  max_in_window: number;
  total_429: number;
  blocked: boolean;
}

/** The emulator's 429 counts of the one IP that called it (the tests' 127.0.0.1). */
export async function window429(emu: { url: string }): Promise<Ip429> {
  const res = await fetch(`${emu.url}/_emulator/ip-block`);
  const view = (await res.json()) as { ips: Record<string, Ip429> };
  const ips = Object.values(view.ips);
  if (ips.length !== 1) throw new Error(`the emulator counted ${ips.length} IPs, not one`);
  return ips[0]!;
}

/** The emulator's snapshots (all filter jobs it started), with their final metadata. */
export async function snapshots(emu: { url: string }): Promise<Obj[]> {
  const list = (await api(emu, 'GET', '/datasets/snapshots')) as Obj[];
  return Promise.all(list.map((s) => api(emu, 'GET', `/datasets/snapshots/${s.id}`)));
}

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The request body as text (requests to the service are small: JSON, or a multipart filter). */
  body: string;
}

export interface Proxy {
  url: string;
  /** Every request that passed through, in arrival order. */
  seen: Seen[];
  /** Answers a request itself instead of forwarding it, when it returns true. */
  intercept?: (r: Seen, res: ServerResponse) => boolean;
  /** Sends a request (one `intercept` kept, say) on to the emulator and pipes the answer back, bytes as they are. */
  forward(r: Seen, res: ServerResponse): void;
  close(): Promise<void>;
}

/**
 * A forwarding HTTP proxy in front of the emulator that records each request: the emulator counts per route, and
 * the resume tests need per-part and per-page counts. It can also answer chosen requests itself.
 */
export async function recordingProxy(target: { port: number }): Promise<Proxy> {
  // What a request is forwarded with, exactly as it arrived.
  const raw = new WeakMap<Seen, { url: string; headers: IncomingHttpHeaders; body: Buffer }>();
  const forward = (r: Seen, res: ServerResponse): void => {
    const { url, headers, body } = raw.get(r)!;
    const up = httpRequest({ host: '127.0.0.1', port: target.port, method: r.method, path: url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.once('error', () => res.destroy());
    });
    up.once('error', () => res.destroy());
    res.once('close', () => up.destroy());
    up.end(body);
  };
  const proxy: Proxy = { url: '', seen: [], forward, close: async () => undefined };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      const body = Buffer.concat(chunks);
      const u = new URL(req.url ?? '/', 'http://proxy');
      const r: Seen = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, body: body.toString() };
      raw.set(r, { url: req.url ?? '/', headers: req.headers, body });
      proxy.seen.push(r);
      if (!proxy.intercept?.(r, res)) forward(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return proxy;
}

/**
 * An emulator (`opts`) behind a recording proxy, started before the file's tests and closed after them: read
 * `.emu` and `.proxy` inside tests and hooks.
 */
export function emulatorBehindProxy(opts: Partial<EmulatorOptions>): { emu: EmulatorHandle; proxy: Proxy } {
  const started = {} as { emu: EmulatorHandle; proxy: Proxy };
  beforeAll(async () => {
    started.emu = await emulator(opts);
    started.proxy = await recordingProxy(started.emu);
  });
  afterAll(async () => {
    await started.proxy?.close();
    await started.emu?.close();
  });
  return started;
}

/**
 * A SERP crawl that tests hold mid-run (lock, interrupt, run history): two queries of two pages each, read one page
 * at a time, so the first page is committed before HELD_PAGE is asked for. `sinks` are flow-style YAML sink configs;
 * the rows are normalized unless `normalize` is false.
 */
export function serpCrawl(name: string, sinks: string[], opts: { normalize?: boolean } = {}): string {
  return [
    'version: 1',
    `name: ${name}`,
    'service:',
    '  base_url: ${SLUICE_BASE_URL:?}',
    '  api_key: ${SLUICE_API_KEY:?}',
    '  retry: { retries: 1, base_delay_ms: 10 }',
    'source:',
    '  type: serp',
    '  zone: serp_zone',
    '  engine: https://www.google.com',
    "  queries: ['coffee roasters portland', 'ramen berlin']",
    '  max_pages: 2',
    '  concurrency: 1',
    ...(opts.normalize === false ? [] : ['transforms:', '  - { type: normalize, preset: serp_organic }']),
    ...(sinks.length === 1 ? [`sink: ${sinks[0]}`] : ['sinks:', ...sinks.map((s) => `  - ${s}`)]),
    '',
  ].join('\n');
}

/** The page of serpCrawl that tests hold: page 2 of the first query. */
export const HELD_PAGE = 'coffee roasters portland@10';

/** The SERP page a request through the proxy asks for, as `<query>@<start>`. */
export function pageOf(r: Seen): string | undefined {
  if (r.path !== '/request') return undefined;
  const target = new URL((JSON.parse(r.body) as { url: string }).url);
  return `${target.searchParams.get('q')}@${target.searchParams.get('start') ?? 0}`;
}

export interface HeldPage {
  /** Resolves once the request for the page arrived (and is held). */
  reached: Promise<void>;
  /** Lets the held request through to the emulator, and every later one. */
  release(): void;
  /** Drops the held request (its connection is destroyed); later ones pass. */
  drop(): void;
}

/** Holds the first request for `page` (see pageOf) unanswered until `release()` or `drop()`. */
export function holdPage(proxy: Proxy, page = HELD_PAGE): HeldPage {
  let reached!: () => void;
  let held: { r: Seen; res: ServerResponse } | undefined;
  const gate: HeldPage = {
    reached: new Promise<void>((resolve) => (reached = resolve)),
    release() {
      proxy.intercept = undefined;
      if (held) proxy.forward(held.r, held.res);
    },
    drop() {
      proxy.intercept = undefined;
      held?.res.destroy();
    },
  };
  proxy.intercept = (r, res) => {
    if (held || pageOf(r) !== page) return false;
    held = { r, res };
    reached();
    return true;
  };
  return gate;
}
