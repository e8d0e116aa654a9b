/**
 * A stand-in for the service that answers the way a broken or hostile one would: just enough of the snapshot API
 * (status, parts, download) for a `snapshot_id` pipeline, each answer replaceable by a hostile writer. Writers keep
 * writing until the client goes away (endless answers), respecting backpressure, so a test proves that sluice ends
 * them rather than the server. Listens on 127.0.0.1 only; `close()` ends every connection.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';

export const HOSTILE_SNAPSHOT = 'snap_hostile1';

/** Writes an answer's body (the status line and headers are written already). */
export type Writer = (res: ServerResponse, req: IncomingMessage) => Promise<void>;

export interface HostileOptions {
  /** Parts the snapshot says it has (default 1). */
  parts?: number;
  /** The snapshot status answer (default: a proper one, `ready`), and its HTTP status (default 200). */
  status?: Writer;
  statusCode?: number;
  /** The body of `download?part=k` (default: `records(3)`). */
  download?: (part: number) => Writer;
  /** Headers of the download answer (default JSONL text). */
  downloadHeaders?: Record<string, string>;
}

export interface HostileService {
  url: string;
  /** Paths asked for, in order (query strings included). */
  readonly requests: string[];
  /** Downloads whose body the client stopped reading before the writer was done (it went away). */
  readonly abandoned: number;
  options: HostileOptions;
  /** Resolves once a request whose path matches `re` has arrived (at once if one did already). */
  asked(re: RegExp): Promise<void>;
  close(): Promise<void>;
}

export async function startHostileService(options: HostileOptions = {}): Promise<HostileService> {
  const sockets = new Set<Socket>();
  let abandoned = 0;
  const requests: string[] = [];
  const waiting: { re: RegExp; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    for (const w of waiting.splice(0)) {
      if (w.re.test(req.url ?? '')) w.resolve();
      else waiting.push(w);
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const o = service.options;
    const m = /^\/datasets\/snapshots\/([^/]+)(\/parts|\/download)?$/.exec(url.pathname);
    let writer: Writer;
    let headers: Record<string, string> = { 'content-type': 'application/json' };
    let code = 200;
    if (!m) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (m[2] === undefined) {
      writer = o.status ?? json({ id: m[1], status: 'ready', dataset_size: 3 });
      code = o.statusCode ?? 200;
    } else if (m[2] === '/parts') writer = json({ parts: o.parts ?? 1 });
    else {
      writer = (o.download ?? (() => records(3)))(Number(url.searchParams.get('part') ?? 1));
      headers = o.downloadHeaders ?? { 'content-type': 'application/jsonl' };
    }
    res.writeHead(code, headers);
    writer(res, req).then(
      () => {
        if (res.destroyed) abandoned++;
        else res.end();
      },
      () => res.destroy(),
    );
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const service: HostileService = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get abandoned() {
      return abandoned;
    },
    options,
    asked: (re) =>
      requests.some((r) => re.test(r))
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiting.push({ re, resolve })),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return service;
}

/** Writes `chunk` unless the client went away; waits while the socket is full. False once the client is gone. */
async function put(res: ServerResponse, chunk: string | Buffer): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(chunk))
    await new Promise<void>((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  return !res.destroyed;
}

export function json(value: unknown): Writer {
  return async (res) => void (await put(res, JSON.stringify(value)));
}

/** `n` proper JSONL records `{"id": k, "name": "record k"}`, k from `from`. */
export function recordLines(n: number, from = 1): string {
  let s = '';
  for (let k = from; k < from + n; k++) s += `${JSON.stringify({ id: k, name: `record ${k}` })}\n`;
  return s;
}

export function records(n: number, from = 1): Writer {
  return text(recordLines(n, from));
}

export function text(body: string | Buffer): Writer {
  return async (res) => void (await put(res, body));
}

/** `text`, then the same 64 KiB chunk forever (until the client goes away). */
export function endless(text: string, chunk: string | Buffer): Writer {
  return async (res) => {
    if (!(await put(res, text))) return;
    while (await put(res, chunk));
  };
}

/** Proper records without end: more than any part announced. */
export function endlessRecords(): Writer {
  return async (res) => {
    for (let k = 1; await put(res, recordLines(500, k)); k += 500);
  };
}

/**
 * A gzip bomb: one gzip member of 1 MiB of the letter `a` (about 1 KB compressed), sent again and again. gunzip reads
 * concatenated members as one stream, so it inflates into one endless line at zlib's best ratio (~1000×).
 */
export function gzipBomb(): Writer {
  const member = gzipSync(Buffer.alloc(1 << 20, 'a'), { level: 9 });
  return async (res) => {
    while (await put(res, member));
  };
}

/** `text` one byte at a time, `everyMs` apart, then the same byte forever: never a pause long enough to time out. */
export function dripFeed(text: string, everyMs: number): Writer {
  return async (res) => {
    for (let i = 0; ; i++) {
      if (!(await put(res, i < text.length ? text[i]! : ' '))) return;
      await sleep(everyMs);
    }
  };
}
