/**
 * A loopback HTTP proxy in front of an HTTP server (ClickHouse's interface), which fails requests the way a network
 * or a load balancer does, on command:
 *
 * - `answerNext(match, status)`: the next request `match` picks is answered by the proxy itself with `status` and a
 *   gateway's HTML page, never reaching the server (a 502/503/504 from a load balancer);
 * - `cutBodyAfter(match, bytes)`: the next request `match` picks is forwarded, and once `bytes` of its body went up
 *   the client's connection is reset and the server's request cut, mid-body (a connection reset mid-insert).
 *
 * `match` sees the request's method and URL (ClickHouse's client puts an INSERT's query in the URL's `query`
 * parameter, decoded here; other statements travel in the body, which the proxy does not read).
 */
import { STATUS_CODES, request, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface ProxiedRequest {
  method: string;
  /** The URL's `query` parameter, decoded ('' when the statement is in the body). */
  query: string;
}

export interface HttpFaultProxy {
  readonly port: number;
  /** `http://127.0.0.1:<port>` with `userinfo` (`user:password@`) when given. */
  url(userinfo?: string): string;
  answerNext(match: (r: ProxiedRequest) => boolean, status: number): void;
  cutBodyAfter(match: (r: ProxiedRequest) => boolean, bytes: number): void;
  /** Faults dealt so far. */
  readonly dealt: { answered: number; cut: number };
  close(): Promise<void>;
}

interface Armed {
  match: (r: ProxiedRequest) => boolean;
  status?: number;
  cutAfter?: number;
}

export async function startHttpFaultProxy(target: { port: number; host?: string }): Promise<HttpFaultProxy> {
  const armed: Armed[] = [];
  const dealt = { answered: 0, cut: 0 };
  const host = target.host ?? '127.0.0.1';

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const seen: ProxiedRequest = { method: req.method ?? 'GET', query: url.searchParams.get('query') ?? '' };
    const i = armed.findIndex((a) => a.match(seen));
    const fault = i >= 0 ? armed.splice(i, 1)[0] : undefined;
    if (fault?.status !== undefined) {
      dealt.answered++;
      // Read the body first, as a load balancer does, then answer for the server.
      req.resume();
      req.on('end', () => {
        res.writeHead(fault.status!, { 'content-type': 'text/html', connection: 'close' });
        res.end(
          `<html><body><h1>${fault.status} ${STATUS_CODES[fault.status!] ?? ''}</h1>from the proxy</body></html>`,
        );
      });
      return;
    }
    const up = request({ host, port: target.port, method: req.method, path: req.url, headers: req.headers }, (ans) => {
      res.writeHead(ans.statusCode ?? 502, ans.headers);
      ans.pipe(res);
    });
    up.on('error', () => req.socket.destroy());
    let sent = 0;
    let cut = false;
    req.on('data', (chunk: Buffer) => {
      if (cut) return;
      if (fault?.cutAfter !== undefined && sent + chunk.length >= fault.cutAfter) {
        cut = true;
        up.write(chunk.subarray(0, Math.max(0, fault.cutAfter - sent)));
        dealt.cut++;
        // The client's socket reset (RST); the server's request ends unfinished (its body never completes).
        req.socket.resetAndDestroy();
        up.destroy();
        return;
      }
      sent += chunk.length;
      if (!up.write(chunk)) {
        req.pause();
        up.once('drain', () => req.resume());
      }
    });
    req.on('end', () => cut || up.end());
  };

  const server: Server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (userinfo) => `http://${userinfo ? `${userinfo}@` : ''}127.0.0.1:${port}`,
    answerNext: (match, status) => void armed.push({ match, status }),
    cutBodyAfter: (match, bytes) => void armed.push({ match, cutAfter: bytes }),
    dealt,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
