/**
 * A webhook receiver for the notification tests: a node http server on 127.0.0.1 that records every request's JSON
 * body, answers with the statuses it is given (then 200), and lets a test wait for a body it expects.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface WebhookReceiver {
  url: string;
  received: Received[];
  /** Statuses to answer the next requests with, in order; 200 once they are used up. */
  answer(...statuses: number[]): void;
  /** Resolves with the first body (already received or to come) that `match` accepts. */
  waitFor(match: (r: Received) => boolean): Promise<Received>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const statuses: number[] = [];
  const waiting: { match: (r: Received) => boolean; resolve: (r: Received) => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const r: Received = { path: req.url ?? '/', headers: req.headers, body: text ? JSON.parse(text) : undefined };
      const status = statuses.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
      if (status !== 200) return;
      received.push(r);
      for (const w of waiting.filter((x) => x.match(r))) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(r);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook/secret-token-5d1e`,
    received,
    answer: (...s) => void statuses.push(...s),
    waitFor: (match) => {
      const found = received.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiting.push({ match, resolve }));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL nobody listens on: a port taken from the OS and released at once. */
export async function closedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook/undeliverable-token-77`;
}
