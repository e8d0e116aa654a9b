/**
 * The emulator as a real HTTP server on 127.0.0.1. Route modules are listed explicitly in `routeModules`.
 * Auth, per-route counters, in-flight maxima and fault injection happen here, once, for every route.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import {
  BILLED_ROUTE,
  Clock,
  Stats,
  clockAnchorSchema,
  dataOptionsOf,
  defaultEmulatorOptions,
  type EmulatorContext,
  type EmulatorOptions,
} from './context.js';
import { deliverWithFault, drop, type BodyFault } from './fault-delivery.js';
import { FaultInjector, PRE_HANDLER_KINDS, ROUTE_KINDS, parseFaultConfig, type FaultKind } from './faults.js';
import { BLOCKED_BODY, BLOCKED_STATUS, BLOCK_AFTER, IpBlock } from './ip-block.js';
import { PersistedState } from './persisted-state.js';
import { HttpError, Router, type EmuRequest, type EmuResponder } from './router.js';
import { register as datasets } from './routes/datasets.js';
import { register as deepLookup } from './routes/deep-lookup.js';
import { register as request } from './routes/request.js';
import { register as zones } from './routes/zones.js';
import { sleep } from '../core/sleep.js';

export { loadFaultsFile, type FaultConfig } from './faults.js';
export { EmulatorStateError } from './state-file.js';

/** Each module adds its routes; its state lives in the closure it creates. */
export type RouteModule = (router: Router, ctx: EmulatorContext) => void;

export interface EmulatorHandle {
  url: string;
  port: number;
  ctx: EmulatorContext;
  stats: Stats;
  /** True when it started from a state file an earlier instance wrote (its snapshots, requests… are known). */
  resumed: boolean;
  /** 429 answers per client IP and the blocks they caused (also at `GET /_emulator/ip-block`). */
  ipBlock: IpBlock;
  /** Stops the server, then saves what was not saved yet. */
  close(): Promise<void>;
}

/** The service's route modules, listed explicitly (no registration by import side effect). */
export const routeModules: RouteModule[] = [datasets, deepLookup, request, zones];

const paidSchema = z.record(z.string(), z.number().int().nonnegative());
/** What the account was billed for besides paid operations: records of snapshots, crawl requests. */
const chargedSchema = z.object({
  records: z.number().int().nonnegative(),
  requests: z.number().int().nonnegative().optional(),
});

/**
 * Starts the emulator. With `stateFile`, it first restores what an earlier instance saved there (and throws
 * EmulatorStateError, leaving the file untouched, when it cannot).
 */
export async function startEmulator(opts: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  const options: EmulatorOptions = { ...defaultEmulatorOptions, ...opts };
  const closing = new AbortController();
  const state = await PersistedState.open(options.stateFile, dataOptionsOf(options));
  const stats = new Stats();
  const savedPaid = state.section('paid', paidSchema, () => ({ ...stats.paid }));
  if (savedPaid) stats.restorePaid(savedPaid);
  const savedCharged = state.section('charged', chargedSchema, () => ({
    records: stats.recordsCharged,
    requests: stats.counters().requests,
  }));
  if (savedCharged) {
    stats.recordsCharged = savedCharged.records;
    stats.requestsBefore = savedCharged.requests ?? 0;
  }
  const savedClock = state.section('clock', clockAnchorSchema, () => ctx.clock.anchor);
  const ctx: EmulatorContext = {
    options,
    clock: new Clock(options.timeScale, savedClock, options.now),
    stats,
    closed: closing.signal,
    state,
  };
  const ipBlock = new IpBlock(options.ipBlockAfter ?? BLOCK_AFTER);
  const faults =
    options.faults === undefined
      ? undefined
      : new FaultInjector(parseFaultConfig(options.faults), options.seed, ctx.stats);
  const router = new Router();
  try {
    for (const mod of routeModules) mod(router, ctx);
  } catch (err) {
    closing.abort(); // restored filter jobs scan in the background
    throw err;
  }

  const server = createServer((req, res) => {
    handle(router, ctx, faults, ipBlock, req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'Internal error.' }));
      } else res.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  }).catch((err: unknown) => {
    closing.abort();
    throw err;
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${options.host}:${port}`,
    port,
    ctx,
    stats: ctx.stats,
    resumed: state.resumed,
    ipBlock,
    close: async () => {
      closing.abort();
      await closeServer(server);
      await state.flush();
    },
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function handle(
  router: Router,
  ctx: EmulatorContext,
  faults: FaultInjector | undefined,
  ipBlock: IpBlock,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://emulator');
  const method = req.method ?? 'GET';
  // The service's clock is the emulated one: clients compare this header with snapshots' `created`.
  res.setHeader('date', new Date(ctx.clock.now()).toUTCString());
  if (url.pathname === '/_emulator/ip-block') return ipBlockAdmin(ctx, ipBlock, method, res);
  const ip = req.socket.remoteAddress ?? 'unknown';
  if (!url.pathname.startsWith('/_emulator/')) {
    // Blocked: refused on every API call, as the service refuses a blocked IP (docs/service.md §6).
    if (ipBlock.blocked(ip)) return plain(res, BLOCKED_STATUS, BLOCKED_BODY);
    countAnswers429(res, () => ipBlock.note429(ip, ctx.clock.now()));
  }

  // Outside the service's paths: test introspection, no auth.
  if (url.pathname === '/_emulator/stats') {
    if (method === 'DELETE') {
      ctx.stats.reset();
      await ctx.state.commit(); // the paid counters are saved
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ctx.stats));
    return;
  }
  if (url.pathname === '/_emulator/counters' || url.pathname === '/_emulator/clock')
    return admin(ctx, method, url.pathname, req, res);

  const auth = req.headers.authorization;
  if (!auth) return plain(res, 401, 'User authentication is required');
  if (auth !== `Bearer ${ctx.options.apiKey}`) return plain(res, 401, 'Invalid credentials');

  const match = router.match(method, url.pathname);
  if (match === undefined) return plain(res, 404, 'Not found');
  if (match === 'method') return plain(res, 405, 'Method not allowed');

  const routeKey = `${method} ${match.route.pattern}`;
  ctx.stats.enter(routeKey);
  if (routeKey === BILLED_ROUTE) ctx.state.changed(); // the account's bill outlives the process (--state-file)
  // In flight until the response is fully sent or the connection dropped, not merely until the handler returns:
  // slow bodies and streams outlive it.
  res.once('close', () => ctx.stats.leave(routeKey));

  let bodyCache: Promise<Buffer> | undefined;
  const request: EmuRequest = {
    method,
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    params: match.params,
    raw: req,
    body: () => (bodyCache ??= readBody(req)),
    json: async (invalid) => {
      const text = (await request.body()).toString('utf8');
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw invalid?.(text) ?? new HttpError(400, { error: 'Request validation failed', error_code: 'validation' });
      }
    },
  };

  const decision = faults?.decide(method, match.route.pattern, url.pathname) ?? { latencyMs: 0 };
  const kind = decision.kind;
  let delay = ctx.options.latencyMs + decision.latencyMs;
  if (kind === 'latency') {
    faults?.count(kind);
    delay += decision.rule?.spike_ms ?? 0;
  }
  // The latency is the service's answer time, counted from the request's arrival, with the emulator's own work
  // (reading the body, generating the page) done inside it rather than after it. Working after the wait made every
  // answer wait for the pages of all requests due in the same millisecond, and requests arriving meanwhile were read
  // late in one batch, due together again: a closed-loop client saw 100 ms + concurrency × ~0.5 ms per request.
  const answerable = delay > 0 ? sleep(delay) : undefined;

  if (kind && kind !== 'latency' && PRE_HANDLER_KINDS.has(kind)) {
    if (answerable) await answerable;
    faults?.count(kind);
    if (kind === 'reset_before') {
      await request.body().catch(() => undefined);
      return drop(res);
    }
    return preHandlerFault(res, kind, decision.rule?.retry_after_s ?? 1);
  }

  if (kind && ROUTE_KINDS.has(kind)) request.fault = { kind, retryAfterS: decision.rule?.retry_after_s ?? 1 };
  const bodyFault: BodyFault | undefined =
    kind && faults && !PRE_HANDLER_KINDS.has(kind) && !ROUTE_KINDS.has(kind)
      ? {
          kind,
          slowTotalMs: decision.rule?.slow_total_ms ?? 1_000,
          resetAfterBytes: decision.rule?.reset_after_bytes ?? 16_384,
          applied: (k) => faults.count(k),
        }
      : undefined;
  const responder = makeResponder(res, bodyFault, answerable);
  try {
    await match.route.handler(request, responder);
  } catch (err) {
    if (!(err instanceof HttpError)) {
      if (answerable) await answerable; // the 500 comes no sooner than an answer would
      throw err;
    }
    if (typeof err.body === 'string') responder.text(err.status, err.body, err.headers);
    else responder.json(err.status, err.body, err.headers);
  }
}

/**
 * The admin endpoints (no auth, like `/_emulator/stats`): `GET /_emulator/counters` (what the account paid for) and
 * `GET`/`POST /_emulator/clock` (`{"now": ISO}` or `{"advance": "1d"}`), which let one emulator play many nights.
 */
async function admin(
  ctx: EmulatorContext,
  method: string,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const reply = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (pathname === '/_emulator/counters') {
    if (method !== 'GET') return plain(res, 405, 'Method not allowed');
    return reply(200, ctx.stats.counters());
  }
  const clockState = () => ({ now: new Date(ctx.clock.now()).toISOString(), pinned: ctx.clock.pinned });
  if (method === 'GET') return reply(200, clockState());
  if (method !== 'POST') return plain(res, 405, 'Method not allowed');
  let target: number;
  try {
    target = clockTarget(JSON.parse((await readBody(req)).toString('utf8') || '{}'), ctx.clock.now());
  } catch (err) {
    return reply(400, { error: (err as Error).message });
  }
  ctx.clock.set(target);
  await ctx.state.commit(); // a restarted emulator goes on from the moved clock
  reply(200, clockState());
}

/** `GET`: the 429 counts per IP; `DELETE`: support clears every block (and the counts). */
function ipBlockAdmin(ctx: EmulatorContext, ipBlock: IpBlock, method: string, res: ServerResponse): void {
  if (method === 'DELETE') ipBlock.clear();
  else if (method !== 'GET') return plain(res, 405, 'Method not allowed');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(ipBlock.view(ctx.clock.now())));
}

/**
 * Calls `on429` when the answer's head says 429, whichever code path writes it (injected faults, routes, error
 * answers): counted the moment it is decided, so the next request already sees it.
 */
function countAnswers429(res: ServerResponse, on429: () => void): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    if (status === 429) on429();
    return writeHead(status, ...rest);
  }) as ServerResponse['writeHead'];
}

const clockBodySchema = z.union([
  z.object({ now: z.iso.datetime({ offset: true }) }).strict(),
  z.object({ advance: z.string().regex(/^\d+(ms|s|m|h|d)$/) }).strict(),
]);
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The emulated time a clock request asks for. */
export function clockTarget(body: unknown, now: number): number {
  const parsed = clockBodySchema.safeParse(body);
  if (!parsed.success) throw new Error('send {"now": "2025-03-01T02:00:00Z"} or {"advance": "1d"} (ms, s, m, h, d)');
  if ('now' in parsed.data) return Date.parse(parsed.data.now);
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(parsed.data.advance)!;
  return now + Number(m[1]) * UNIT_MS[m[2]!]!;
}

const FAULT_MESSAGES: Partial<Record<FaultKind, [number, string]>> = {
  '429': [429, 'Too many requests'],
  '429_retry_after': [429, 'Too many requests'],
  '500': [500, 'Internal error.'],
  '502': [502, 'Bad gateway'],
  '503': [503, 'Service unavailable'],
};

/** An error answer instead of running the handler: the operation was not started. */
function preHandlerFault(res: ServerResponse, kind: FaultKind, retryAfterS: number): void {
  const [status, error] = FAULT_MESSAGES[kind] ?? [500, 'Internal error.'];
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-emulator-fault': kind };
  if (kind === '429_retry_after') headers['retry-after'] = String(retryAfterS);
  res.writeHead(status, headers);
  res.end(JSON.stringify({ error }));
}

/**
 * The responder applies a response-time fault at most once per request (the first body sent), and sends nothing
 * before `answerable` settles (the request's latency has passed).
 */
function makeResponder(
  res: ServerResponse,
  fault: BodyFault | undefined,
  answerable: Promise<void> | undefined,
): EmuResponder {
  let pending = fault;
  const take = (): BodyFault | undefined => {
    const f = pending;
    pending = undefined;
    return f;
  };
  const deliver = (status: number, headers: Record<string, string>, buf: Buffer): void => {
    const all = { ...headers, 'content-length': String(buf.length) };
    const f = take();
    if (!f) {
      res.writeHead(status, all);
      res.end(buf);
      return;
    }
    const json = /\bjson\b/i.test(headers['content-type'] ?? '');
    deliverWithFault(res, status, all, [buf], f, { gzip: false, totalLength: buf.length, json }).catch(() => drop(res));
  };
  const send = (status: number, headers: Record<string, string>, body: string): void => {
    const buf = Buffer.from(body, 'utf8');
    if (answerable)
      answerable
        .then(() => deliver(status, headers, buf))
        .catch((err: unknown) => res.destroy(err instanceof Error ? err : new Error(String(err))));
    else deliver(status, headers, buf);
  };
  return {
    raw: res,
    json(status, body, headers = {}) {
      send(status, { 'content-type': 'application/json', ...headers }, JSON.stringify(body));
    },
    text(status, body, headers = {}) {
      send(status, { 'content-type': 'text/html; charset=utf-8', ...headers }, body);
    },
    async stream(status, headers, body, opts) {
      if (answerable) await answerable;
      const f = take();
      if (f) {
        await deliverWithFault(res, status, headers, body, f, { gzip: opts?.gzip === true }).catch(() => drop(res));
        return;
      }
      res.writeHead(status, headers);
      const readable = body instanceof Readable ? body : Readable.from(body, { objectMode: false });
      await pipeline(readable, res);
    },
  };
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
