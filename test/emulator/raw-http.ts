/** A raw HTTP client for emulator tests: reports exactly what arrived, including bodies cut by a dropped connection. */
import { request } from 'node:http';

export interface RawResponse {
  /** Undefined when the connection dropped before any response. */
  status?: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Body chunks as they arrived. */
  chunks: number;
  /** Set when the connection failed (before or during the body). */
  error?: Error;
  /** True when the body ended normally. */
  complete: boolean;
}

export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; onFirstChunk?: () => void } = {},
): Promise<RawResponse> {
  return new Promise((resolve) => {
    const out: RawResponse = { headers: {}, body: Buffer.alloc(0), chunks: 0, complete: false };
    const parts: Buffer[] = [];
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      out.body = Buffer.concat(parts);
      if (error) out.error = error;
      resolve(out);
    };
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      out.status = res.statusCode;
      out.headers = res.headers;
      res.on('data', (c: Buffer) => {
        if (out.chunks++ === 0) opts.onFirstChunk?.();
        parts.push(c);
      });
      res.on('end', () => {
        // 'end' also fires after an abort on some Node versions; `complete` tells the two apart.
        out.complete = res.complete;
        finish(res.complete ? undefined : new Error('aborted'));
      });
      res.on('aborted', () => finish(new Error('aborted')));
      res.on('error', (e) => finish(e));
    });
    req.on('error', (e) => finish(e));
    req.end(opts.body);
  });
}
