/**
 * How answers get onto the wire: the responder handed to route handlers (latency first, then at most one
 * response-time fault), the error answers of faults decided before a handler runs, and the bare helpers every
 * path uses. Apart from the request path (server.ts), which decides what happens, because this decides how bytes
 * leave, and the fault kinds' delivery is tested here on its own.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { deliverWithFault, drop, type BodyFault } from './fault-delivery.js';
import type { FaultKind } from './faults.js';
import type { EmuResponder } from './router.js';

const FAULT_MESSAGES: Partial<Record<FaultKind, [number, string]>> = {
  '429': [429, 'Too many requests'],
  '429_retry_after': [429, 'Too many requests'],
  '500': [500, 'Internal error.'],
  '502': [502, 'Bad gateway'],
  '503': [503, 'Service unavailable'],
};

/** An error answer instead of running the handler: the operation was not started. */
export function preHandlerFault(res: ServerResponse, kind: FaultKind, retryAfterS: number): void {
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
export function makeResponder(
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

export function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(text);
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
