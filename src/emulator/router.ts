/**
 * The emulator's tiny router. Route modules (datasets, deep lookup, request, zones) each export a
 * `register(router, state)` function; server.ts lists them explicitly.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

export interface EmuRequest {
  method: string;
  /** Path without the query string, e.g. `/datasets/snapshots/snap_1/download`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** Named segments of the route pattern (`:id`). */
  params: Record<string, string>;
  /** Whole request body (bodies to the service are small). */
  body(): Promise<Buffer>;
  /**
   * Body parsed as JSON; invalid JSON throws `invalid(text)` (an API's own envelope), by default the marketplace's
   * HttpError 400.
   */
  json(invalid?: (text: string) => Error): Promise<unknown>;
  raw: IncomingMessage;
  /** A fault the route applies itself (faults.ts `ROUTE_KINDS`), set by the server; the route counts it if applied. */
  fault?: { kind: string; retryAfterS: number; throttleS: number };
}

export interface EmuResponder {
  json(status: number, body: unknown, headers?: Record<string, string>): void;
  text(status: number, body: string, headers?: Record<string, string>): void;
  /**
   * Stream a body (e.g. a snapshot download). Backpressure is honoured. Fault injection (reset mid-body,
   * truncated gzip, slow body) is applied here, so routes need not know about faults.
   * `gzip: true` tells the fault layer the bytes are gzip (for the truncated-gzip fault).
   */
  stream(
    status: number,
    headers: Record<string, string>,
    body: AsyncIterable<Uint8Array> | Readable,
    opts?: { gzip?: boolean },
  ): Promise<void>;
  raw: ServerResponse;
}

export type Handler = (req: EmuRequest, res: EmuResponder) => unknown | Promise<unknown>;

/** Thrown by handlers to answer with an error in the given shape. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
  }
}

interface Route {
  method: string;
  /** Pattern as registered (`/datasets/snapshots/:id`): the key of per-route counters. */
  pattern: string;
  regex: RegExp;
  names: string[];
  handler: Handler;
}

export interface RouteMatch {
  route: { method: string; pattern: string; handler: Handler };
  params: Record<string, string>;
}

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: Handler): void {
    const names: string[] = [];
    const source = pattern
      .split('/')
      .map((seg) => {
        if (seg.startsWith(':')) {
          names.push(seg.slice(1));
          return '([^/]+)';
        }
        return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('/');
    this.routes.push({ method, pattern, regex: new RegExp(`^${source}/?$`), names, handler });
  }

  get(pattern: string, handler: Handler): void {
    this.add('GET', pattern, handler);
  }
  post(pattern: string, handler: Handler): void {
    this.add('POST', pattern, handler);
  }
  delete(pattern: string, handler: Handler): void {
    this.add('DELETE', pattern, handler);
  }

  /** Returns the match, or `'method'` when the path exists under another method, or undefined. */
  match(method: string, path: string): RouteMatch | 'method' | undefined {
    let pathMatched = false;
    for (const r of this.routes) {
      const m = r.regex.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (r.method !== method) continue;
      const params: Record<string, string> = {};
      r.names.forEach((n, i) => (params[n] = decodeURIComponent(m[i + 1] ?? '')));
      return { route: r, params };
    }
    return pathMatched ? 'method' : undefined;
  }
}
