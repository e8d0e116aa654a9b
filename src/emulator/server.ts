/**
 * The emulator as a real HTTP server on 127.0.0.1. Route modules are listed explicitly in `routeModules`.
 * Auth, per-route counters, in-flight maxima and fault injection happen here, once, for every route.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Clock, Stats, defaultEmulatorOptions, type EmulatorContext, type EmulatorOptions } from './context.js';
import { HttpError, Router, type EmuRequest, type EmuResponder } from './router.js';
import { register as datasets } from './routes/datasets.js';
import { register as deepLookup } from './routes/deep-lookup.js';
import { register as request } from './routes/request.js';
import { register as zones } from './routes/zones.js';

/** Each module adds its routes; its state lives in the closure it creates. */
export type RouteModule = (router: Router, ctx: EmulatorContext) => void;

export interface EmulatorHandle {
  url: string;
  port: number;
  ctx: EmulatorContext;
  stats: Stats;
  close(): Promise<void>;
}

/** The service's route modules, listed explicitly (no registration by import side effect). */
export const routeModules: RouteModule[] = [datasets, deepLookup, request, zones];

export async function startEmulator(opts: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  const options: EmulatorOptions = { ...defaultEmulatorOptions, ...opts };
  const ctx: EmulatorContext = { options, clock: new Clock(options.timeScale), stats: new Stats() };
  const router = new Router();
  for (const mod of routeModules) mod(router, ctx);

  const server = createServer((req, res) => {
    handle(router, ctx, req, res).catch((err: unknown) => {
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
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${options.host}:${port}`,
    port,
    ctx,
    stats: ctx.stats,
    close: () => closeServer(server),
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function handle(router: Router, ctx: EmulatorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://emulator');
  const method = req.method ?? 'GET';

  // Outside the service's paths: test introspection, no auth.
  if (url.pathname === '/_emulator/stats') {
    if (method === 'DELETE') ctx.stats.reset();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ctx.stats));
    return;
  }

  const auth = req.headers.authorization;
  if (!auth) return plain(res, 401, 'User authentication is required');
  if (auth !== `Bearer ${ctx.options.apiKey}`) return plain(res, 401, 'Invalid credentials');

  const match = router.match(method, url.pathname);
  if (match === undefined) return plain(res, 404, 'Not found');
  if (match === 'method') return plain(res, 405, 'Method not allowed');

  const routeKey = `${method} ${match.route.pattern}`;
  ctx.stats.enter(routeKey);
  try {
    if (ctx.options.latencyMs > 0) await sleep(ctx.options.latencyMs);
    let bodyCache: Promise<Buffer> | undefined;
    const request: EmuRequest = {
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      params: match.params,
      raw: req,
      body: () => (bodyCache ??= readBody(req)),
      json: async () => {
        const buf = await request.body();
        try {
          return JSON.parse(buf.toString('utf8')) as unknown;
        } catch {
          throw new HttpError(400, { error: 'Request validation failed', error_code: 'validation' });
        }
      },
    };
    const responder = makeResponder(res);
    try {
      await match.route.handler(request, responder);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      if (typeof err.body === 'string') responder.text(err.status, err.body, err.headers);
      else responder.json(err.status, err.body, err.headers);
    }
  } finally {
    ctx.stats.leave(routeKey);
  }
}

function makeResponder(res: ServerResponse): EmuResponder {
  return {
    raw: res,
    json(status, body, headers = {}) {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    },
    text(status, body, headers = {}) {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
      res.end(body);
    },
    async stream(status, headers, body) {
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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
