/**
 * HTTP servers that misbehave on purpose, for the tests of sluice's outbound calls (webhooks, the Pushgateway,
 * traces): real node http servers on 127.0.0.1, each counting what it was sent.
 *
 * - `huge`: answers with `bytes` of body (1 GiB by default), produced lazily from one small buffer as the client
 *   reads (backpressure honoured), so the server itself stays small; it stops when the client goes.
 * - `hanging`: takes the request and never answers (until closed).
 * - `echo`: answers `status` with the request's path and query as the body, as a gateway's error page may.
 *
 * `peakRss` measures what a child process took at most, for the bounds the huge answers test.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';

export interface HostileServer {
  url: string;
  /** Requests whose headers arrived. */
  requests: { method: string; path: string; headers: IncomingHttpHeaders }[];
  /** TCP connections accepted. */
  connections: number;
  /** The most connections open at one time. */
  mostOpen: number;
  /** Body bytes written to clients (`huge`). */
  bytesSent: number;
  close(): Promise<void>;
}

type Behaviour =
  { kind: 'huge'; bytes?: number; status?: number } | { kind: 'hanging' } | { kind: 'echo'; status: number };

export const GIB = 1024 ** 3;

export async function startHostileServer(behaviour: Behaviour): Promise<HostileServer> {
  const sockets = new Set<Socket>();
  const state: HostileServer = {
    url: '',
    requests: [],
    connections: 0,
    mostOpen: 0,
    bytesSent: 0,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    state.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    req.resume();
    req.once('end', () => {
      if (behaviour.kind === 'hanging') return;
      if (behaviour.kind === 'echo') {
        res.writeHead(behaviour.status, { 'content-type': 'text/plain' }).end(`no such group: ${req.url}`);
        return;
      }
      streamHuge(res, behaviour.bytes ?? GIB, behaviour.status ?? 200, (n) => (state.bytesSent += n));
    });
  });
  server.on('connection', (s: Socket) => {
    state.connections++;
    sockets.add(s);
    state.mostOpen = Math.max(state.mostOpen, sockets.size);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}

function streamHuge(res: ServerResponse, bytes: number, status: number, sent: (n: number) => void): void {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let left = bytes;
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': String(bytes) });
  const pump = (): void => {
    while (left > 0 && !res.destroyed) {
      const n = Math.min(left, chunk.length);
      left -= n;
      sent(n);
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
    }
    if (left === 0) res.end();
  };
  res.once('close', () => (left = 0));
  pump();
}

/**
 * The peak RSS of a child node process, told by the child itself as it exits: `env` (NODE_OPTIONS preloading a
 * script written into `dir`) for the child, `mib(stderr)` to read it back.
 */
export function peakRss(dir: string): { env: Record<string, string>; mib(stderr: string): number } {
  const script = path.join(dir, 'peak-rss.cjs');
  writeFileSync(
    script,
    `process.on('exit', () => require('node:fs').writeSync(2, '\\npeak-rss-kib=' + process.resourceUsage().maxRSS + '\\n'));`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${script}` },
    mib: (stderr) => Number(/peak-rss-kib=(\d+)/.exec(stderr)?.[1] ?? NaN) / 1024,
  };
}
