/**
 * The emulator as a real HTTP server on 127.0.0.1. Route modules are listed explicitly in `routeModules`.
 * Auth, per-route counters, in-flight maxima and fault injection happen here, once, for every route; the
 * `/_emulator/` endpoints are in admin.ts, how answers are written (latency, response-time faults) in responder.ts.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { admin, ipBlockAdmin } from './admin.js';
import {
  Clock,
  Stats,
  clockAnchorSchema,
  dataOptionsOf,
  defaultEmulatorOptions,
  type EmulatorContext,
  type EmulatorOptions,
} from './context.js';
import { drop, type BodyFault } from './fault-delivery.js';
import { FaultInjector, PRE_HANDLER_KINDS, ROUTE_KINDS, parseFaultConfig } from './faults.js';
import { BLOCKED_BODY, BLOCKED_STATUS, BLOCK_AFTER, IpBlock } from './ip-block.js';
import { PersistedState } from './persisted-state.js';
import { makeResponder, plain, preHandlerFault, readBody } from './responder.js';
import { HttpError, Router, type EmuRequest } from './router.js';
import { register as datasets } from './routes/datasets.js';
import { register as deepLookup } from './routes/deep-lookup.js';
import { register as request } from './routes/request.js';
import { register as zones } from './routes/zones.js';
import { sleep } from '../core/sleep.js';

export { clockTarget } from './admin.js';
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

  if (kind && ROUTE_KINDS.has(kind))
    request.fault = {
      kind,
      retryAfterS: decision.rule?.retry_after_s ?? 1,
      throttleS: decision.rule?.throttle_s ?? 10,
    };
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
 * Calls `on429` when the answer's head says 429, whichever code path writes it (injected faults, routes, error
 * answers): counted the moment it is decided, so the next request already sees it. A 429 given as the real status
 * of a 200 (`x-brd-status-code`, a throttled zone) counts as one given outright: whether the service's block counts
 * them is not documented, and counting them is the stricter reading.
 */
function countAnswers429(res: ServerResponse, on429: () => void): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    if (status === 429 || realStatus429(res, rest)) on429();
    return writeHead(status, ...rest);
  }) as ServerResponse['writeHead'];
}

/** Whether `x-brd-status-code` says 429, set on the response or passed to `writeHead` (as an object or a list). */
function realStatus429(res: ServerResponse, args: unknown[]): boolean {
  if (String(res.getHeader('x-brd-status-code')) === '429') return true;
  const headers = args.find((a) => typeof a === 'object' && a !== null);
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      if (String(headers[i]).toLowerCase() === 'x-brd-status-code' && String(headers[i + 1]) === '429') return true;
    return false;
  }
  const h = headers as Record<string, unknown> | undefined;
  return (
    h !== undefined &&
    Object.entries(h).some(([k, v]) => k.toLowerCase() === 'x-brd-status-code' && String(v) === '429')
  );
}
