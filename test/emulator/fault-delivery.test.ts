import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverWithFault, type BodyFault } from '../../src/emulator/fault-delivery.js';
import type { FaultKind } from '../../src/emulator/faults.js';
import { rawRequest } from './raw-http.js';

// A body of ~60 KB gzip, sent in 8 KiB chunks as a snapshot download would stream it.
const plain = Buffer.from(
  Array.from({ length: 4000 }, (_, i) => JSON.stringify({ id: i, name: `record ${i}`, x: (i * 7919) % 1000 })).join(
    '\n',
  ),
);
const gz = gzipSync(plain, { level: 1 });
function* chunks(buf: Buffer, size = 8192): Generator<Buffer> {
  for (let off = 0; off < buf.length; off += size) yield buf.subarray(off, off + size);
}

let server: Server;
let base: string;
const applied: string[] = [];

beforeAll(async () => {
  // Path: /<kind>/<gzip|plain>; "none" sends without a fault.
  server = createServer((req, res) => {
    const [, kind, type] = (req.url ?? '').split('/');
    const gzip = type === 'gzip';
    const body = gzip ? gz : plain;
    const fault: BodyFault = {
      kind: kind as FaultKind,
      slowTotalMs: 50,
      resetAfterBytes: 20_000,
      applied: (k) => applied.push(k),
    };
    const headers = { 'content-type': gzip ? 'application/gzip' : 'application/jsonl' };
    void deliverWithFault(res, 200, headers, chunks(body), fault, { gzip });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('body faults on streams', () => {
  it('truncated_gzip: a clean end before the gzip trailer, so the body does not fully inflate', async () => {
    const res = await rawRequest(`${base}/truncated_gzip/gzip`);
    expect(res.status).toBe(200);
    expect(res.complete).toBe(true);
    expect(res.error).toBeUndefined();
    expect(res.body.length).toBeLessThan(gz.length);
    expect(res.body.length).toBeGreaterThan(gz.length / 2);
    expect(res.body.equals(gz.subarray(0, res.body.length))).toBe(true);
    expect(() => gunzipSync(res.body)).toThrow(/unexpected end of file/);
    expect(applied).toContain('truncated_gzip');
  });

  it('truncated_gzip leaves a non-gzip stream whole', async () => {
    const before = applied.length;
    const res = await rawRequest(`${base}/truncated_gzip/plain`);
    expect(res.complete).toBe(true);
    expect(res.body.equals(plain)).toBe(true);
    expect(applied.length).toBe(before);
  });

  it('reset: the stream stops after reset_after_bytes and the connection drops', async () => {
    const res = await rawRequest(`${base}/reset/gzip`);
    expect(res.status).toBe(200);
    expect(res.complete).toBe(false);
    expect(res.error).toBeDefined();
    expect(res.body.length).toBe(20_000);
    expect(res.body.equals(gz.subarray(0, 20_000))).toBe(true);
  });

  it('slow_body: the whole stream arrives, in pieces', async () => {
    const res = await rawRequest(`${base}/slow_body/gzip`);
    expect(res.complete).toBe(true);
    expect(res.body.equals(gz)).toBe(true);
    expect(res.chunks).toBeGreaterThan(1);
  });

  it('reset_after: no response at all', async () => {
    const res = await rawRequest(`${base}/reset_after/gzip`);
    expect(res.status).toBeUndefined();
    expect(res.error).toBeDefined();
  });

  it('a kind that is not a body fault passes the stream through', async () => {
    const res = await rawRequest(`${base}/latency/plain`);
    expect(res.complete).toBe(true);
    expect(res.body.equals(plain)).toBe(true);
  });
});
