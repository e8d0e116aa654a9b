/**
 * Writing a response body under a response-time fault (reset mid-body, reset before the answer, slow body,
 * truncated gzip). The promise settles when the response is finished or the connection dropped, so the server
 * can count the request as in flight until then.
 */
import type { ServerResponse } from 'node:http';
import type { FaultKind } from './faults.js';
import { sleep } from '../core/sleep.js';

export interface BodyFault {
  kind: FaultKind;
  slowTotalMs: number;
  resetAfterBytes: number;
  /** Called once when the fault actually takes effect (counters). */
  applied(kind: FaultKind): void;
}

/** Slow bodies trickle in at most this many delayed pieces. */
const SLOW_PIECES = 10;
/** Bytes held back from a gzip stream: more than the 8-byte trailer, so the last deflate block is cut too. */
const GZIP_TAIL = 1024;

/**
 * Sends `status`/`headers` and the body under `fault`. `fixedLength` is true for bodies known up front (JSON,
 * text), where `reset` cuts at half the body instead of after `resetAfterBytes`.
 */
export async function deliverWithFault(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  fault: BodyFault,
  opts: { gzip: boolean; totalLength?: number },
): Promise<void> {
  const kind = fault.kind;
  if (kind === 'reset_after') {
    fault.applied(kind);
    drop(res);
    return;
  }
  const truncate = kind === 'truncated_gzip' && opts.gzip;
  if (truncate) {
    // A clean end of a short body: no Content-Length to contradict it.
    headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'content-length'));
  }
  res.writeHead(status, headers);

  if (kind === 'reset') {
    fault.applied(kind);
    const cut = opts.totalLength !== undefined ? Math.floor(opts.totalLength / 2) : fault.resetAfterBytes;
    let sent = 0;
    let held: Buffer | undefined;
    for await (const c of body) {
      if (held) {
        if (sent + held.length >= cut) {
          await write(res, held.subarray(0, Math.max(0, cut - sent)));
          return drop(res);
        }
        await write(res, held);
        sent += held.length;
      }
      held = Buffer.from(c);
    }
    // The body was shorter than the cut: half of its last piece still goes out, so the drop is mid-body.
    const last = held ?? Buffer.alloc(0);
    await write(res, last.subarray(0, Math.min(Math.max(0, cut - sent), Math.floor(last.length / 2))));
    return drop(res);
  }

  if (kind === 'slow_body') {
    fault.applied(kind);
    const delay = fault.slowTotalMs / SLOW_PIECES;
    let pieces = 0;
    for await (const c of body) {
      const buf = Buffer.from(c);
      if (pieces >= SLOW_PIECES) {
        await write(res, buf);
        continue;
      }
      const size = Math.max(1, Math.ceil((opts.totalLength ?? buf.length * SLOW_PIECES) / SLOW_PIECES));
      for (let off = 0; off < buf.length; off += size) {
        if (pieces < SLOW_PIECES) {
          pieces++;
          await sleep(delay);
        }
        await write(res, buf.subarray(off, off + size));
      }
    }
    return end(res);
  }

  if (truncate) {
    fault.applied(kind);
    let tail = Buffer.alloc(0);
    let total = 0;
    for await (const c of body) {
      total += c.length;
      tail = Buffer.concat([tail, Buffer.from(c)]);
      if (tail.length > GZIP_TAIL) {
        await write(res, tail.subarray(0, tail.length - GZIP_TAIL));
        tail = tail.subarray(tail.length - GZIP_TAIL);
      }
    }
    // A body no longer than the tail still loses its second half (and with it the trailer).
    if (total <= GZIP_TAIL) await write(res, tail.subarray(0, Math.floor(tail.length / 2)));
    return end(res);
  }

  for await (const c of body) await write(res, c);
  return end(res);
}

/** Drops the connection without a proper end (what a client sees as a reset). */
export function drop(res: ServerResponse): void {
  res.socket?.destroy();
  res.destroy();
}

/** Resolves once the chunk is handed to the socket, so a following drop comes after it. */
function write(res: ServerResponse, chunk: Uint8Array): Promise<void> {
  if (chunk.length === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (res.destroyed) return reject(new Error('client disconnected'));
    const onClose = (): void => reject(new Error('client disconnected'));
    res.once('close', onClose);
    res.write(chunk, (err) => {
      res.off('close', onClose);
      if (err) reject(err);
      else resolve();
    });
  });
}

function end(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => res.end(() => resolve()));
}
