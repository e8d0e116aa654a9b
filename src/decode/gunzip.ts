/**
 * Bytes in, decompressed bytes out: gzip is recognised by its magic bytes (1f 8b), never by headers or file names,
 * because the service does not say how `compress=true` is signalled (docs/service.md §1.2).
 */
import { Readable, pipeline } from 'node:stream';
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { createGunzip } from 'node:zlib';
import { DecodeError } from '../core/errors.js';
import { DEFAULT_LIMITS, INFLATE_FLOOR, LIMIT_OPTIONS, LimitExceeded, formatBytes } from '../core/limits.js';

/** 64 KiB output chunks: the 16 KiB default measured ~1.5× slower on large snapshots. */
const GUNZIP_CHUNK = 64 * 1024;

/**
 * A caller may hand over its input as one huge buffer: cut it into gunzip-sized pieces, so that decoders, which
 * hand over their batches after each piece, never hold more than a piece's worth of records.
 */
function* pieces(b: Buffer): Generator<Buffer> {
  if (b.length <= GUNZIP_CHUNK) {
    if (b.length > 0) yield b;
    return;
  }
  for (let at = 0; at < b.length; at += GUNZIP_CHUNK) yield b.subarray(at, at + GUNZIP_CHUNK);
}

export function toBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

export interface InflateBounds {
  /** Decompressed bytes of the unit at most. */
  maxUnitBytes: number;
  /** Decompressed bytes per compressed byte at most, past `INFLATE_FLOOR`. */
  maxInflateRatio: number;
  /** Cancels the read: checked at every chunk, whatever the input does. */
  signal?: AbortSignal;
}

/**
 * A decoder's loop between two input chunks can be all microtasks (a gzip member inflating from bytes already
 * read, a caller's buffer cut in pieces): timers and signal handlers would then wait for the whole unit. Every
 * `YIELD_MS` of such work, the loop lets the event loop turn once, so a deadline or SIGTERM is heard.
 */
const YIELD_MS = 50;

/** Counts what a unit's input produces, against its bounds, and keeps the event loop turning. */
class OutputGuard {
  private total = 0;
  private lastTurn = performance.now();

  constructor(
    private readonly unit: string,
    private readonly bounds: InflateBounds,
  ) {}

  /** `n` more decompressed bytes; `compressed`: the gzip bytes read so far (undefined for plain input). */
  async pass(n: number, compressed?: number): Promise<void> {
    this.bounds.signal?.throwIfAborted();
    this.total += n;
    const { maxUnitBytes, maxInflateRatio } = this.bounds;
    if (this.total > maxUnitBytes)
      throw new LimitExceeded(
        'maxUnitBytes',
        `${this.unit}: more than ${formatBytes(maxUnitBytes)} of data in one unit (decompressed; ${LIMIT_OPTIONS.maxUnitBytes}); nothing of it was committed`,
      );
    if (compressed !== undefined && this.total > maxInflateRatio * Math.max(compressed, INFLATE_FLOOR))
      throw new LimitExceeded(
        'maxInflateRatio',
        `${this.unit}: the gzip body inflates more than ${maxInflateRatio}× (${formatBytes(this.total)} from ${formatBytes(compressed)} compressed; ${LIMIT_OPTIONS.maxInflateRatio}): a gzip bomb, not records; nothing of it was committed`,
      );
    const now = performance.now();
    if (now - this.lastTurn >= YIELD_MS) {
      await nextMacrotask();
      this.lastTurn = performance.now();
      this.bounds.signal?.throwIfAborted();
    }
  }
}

const UNBOUNDED: InflateBounds = {
  maxUnitBytes: DEFAULT_LIMITS.maxUnitBytes,
  maxInflateRatio: DEFAULT_LIMITS.maxInflateRatio,
};

/**
 * The input's bytes, gunzipped when they start with the gzip magic. Concatenated gzip members are one stream.
 * A truncated or corrupt gzip stream throws `DecodeError` (offset in the compressed input); an error of the input
 * iterable itself (the client's `NetworkError` for a reset) propagates unchanged: it is already classified. More
 * output than `bounds` allow throws `LimitExceeded`; an aborted `bounds.signal` throws its reason.
 */
export async function* decompressed(
  input: AsyncIterable<Uint8Array>,
  unit: string,
  bounds: InflateBounds = UNBOUNDED,
): AsyncGenerator<Buffer> {
  const guard = new OutputGuard(unit, bounds);
  const it = input[Symbol.asyncIterator]();
  /** The input ended, failed (nothing to release then), or was handed to gunzip (which releases it). */
  let done = false;
  const next = async (): Promise<IteratorResult<Uint8Array>> => {
    try {
      return await it.next();
    } catch (err) {
      done = true;
      throw err;
    }
  };
  try {
    const head: Buffer[] = [];
    let headLength = 0;
    while (headLength < 2) {
      const r = await next();
      if (r.done) {
        done = true;
        break;
      }
      const b = toBuffer(r.value);
      head.push(b);
      headLength += b.length;
    }
    const first = head.length === 1 ? head[0]! : Buffer.concat(head);
    if (first.length >= 2 && first[0] === 0x1f && first[1] === 0x8b) {
      done = true; // gunzip owns the input from here
      yield* gunzip(first, it, unit, guard);
      return;
    }
    for (const p of pieces(first)) {
      await guard.pass(p.length);
      yield p;
    }
    for (let r = await next(); !r.done; r = await next())
      for (const p of pieces(toBuffer(r.value))) {
        await guard.pass(p.length);
        yield p;
      }
    done = true;
  } finally {
    // A consumer that stops early, an error downstream or a bound passed must release the input (an HTTP body).
    if (!done) await it.return?.();
  }
}

async function* gunzip(
  first: Buffer,
  rest: AsyncIterator<Uint8Array>,
  unit: string,
  guard: OutputGuard,
): AsyncGenerator<Buffer> {
  let fed = 0;
  let inputError: unknown;
  let inputErrored = false;
  async function* compressed(): AsyncGenerator<Buffer> {
    try {
      fed += first.length;
      yield first;
      while (true) {
        let r: IteratorResult<Uint8Array>;
        try {
          r = await rest.next();
        } catch (err) {
          // Only the input's own failure counts here: zlib's errors are thrown into this generator too.
          inputErrored = true;
          inputError = err;
          throw err;
        }
        if (r.done) return;
        const b = toBuffer(r.value);
        fed += b.length;
        yield b;
      }
    } finally {
      // Stopping early (the consumer returned, or gunzip failed) must release the input (an HTTP body).
      await rest.return?.();
    }
  }
  const z = createGunzip({ chunkSize: GUNZIP_CHUNK });
  // highWaterMark 1: pull one compressed chunk at a time rather than reading 16 ahead.
  pipeline(Readable.from(compressed(), { objectMode: true, highWaterMark: 1 }), z, () => {});
  try {
    const inflated = z[Symbol.asyncIterator]();
    while (true) {
      let r: IteratorResult<Buffer>;
      try {
        r = (await inflated.next()) as IteratorResult<Buffer>;
      } catch (err) {
        if (inputErrored) throw inputError;
        throw zlibError(err, unit, z.bytesWritten, fed);
      }
      if (r.done) return;
      await guard.pass(r.value.length, fed);
      yield r.value;
    }
  } finally {
    z.destroy();
  }
}

/**
 * zlib's failures, typed here so that nothing downstream reads their codes: Z_BUF_ERROR ("unexpected end of
 * file") is a truncated stream, any other Z_* code corrupt data. Both are `DecodeError`: the bytes arrived broken,
 * and downloading them again may help. Anything else is not a property of the input and is left as it is.
 */
function zlibError(err: unknown, unit: string, consumed: number, fed: number): unknown {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return err;
  // Offsets here count compressed bytes: the decompressed position of a damaged stream is unknowable.
  if (code === 'Z_BUF_ERROR')
    return new DecodeError(unit, fed, 'truncated gzip input: the compressed stream ends without its gzip trailer', err);
  if (!code.startsWith('Z_')) return err;
  // zlib only says which input chunk failed: name the range of compressed bytes it covered.
  return new DecodeError(
    unit,
    consumed,
    `corrupt gzip input (zlib: ${(err as Error).message}) in compressed bytes ${consumed}-${fed}, first bad chunk`,
    err,
  );
}
