/**
 * Feeding decoders: the same bytes in different chunkings, collecting batches and dead letters. Inputs are built by
 * the project's own generator (bench/lib/company-records.ts) or written inline.
 */
import { gzipSync } from 'node:zlib';
import { rng } from '../../bench/lib/company-records.js';
import type { Batch, DeadLetter, Row } from '../../src/core/types.js';
import { decode, type DecodeOptions } from '../../src/decode/index.js';

export type Chunking = number | 'random';

/** `bytes` as an async iterable of chunks: fixed sizes, or random sizes from 1 to 300 bytes (seeded). */
export async function* chunks(bytes: Uint8Array, size: Chunking = 65536, seed = 7): AsyncGenerator<Uint8Array> {
  const r = rng(seed);
  for (let at = 0; at < bytes.length;) {
    const n = size === 'random' ? 1 + Math.floor(r() * 300) : size;
    // Plain Uint8Arrays, not Buffers: the decoder must accept what undici hands out.
    yield new Uint8Array(bytes.subarray(at, at + n));
    at += n;
  }
}

export interface Decoded {
  batches: Batch[];
  rows: Row[];
  deadLetters: DeadLetter[];
}

export type Opts = Omit<DecodeOptions, 'deadLetter' | 'unit'> & { unit?: string };

export async function decodeAll(input: Uint8Array | string, opts: Opts, chunking: Chunking = 65536): Promise<Decoded> {
  const bytes = typeof input === 'string' ? Buffer.from(input) : input;
  const deadLetters: DeadLetter[] = [];
  const batches: Batch[] = [];
  for await (const b of decode(chunks(bytes, chunking), {
    unit: 'unit:test',
    ...opts,
    deadLetter: (d) => deadLetters.push(d),
  }))
    batches.push(b);
  return { batches, rows: batches.flat(), deadLetters };
}

/** The error a decode rejects with. */
export async function decodeError(
  input: Uint8Array | string,
  opts: Opts,
  chunking: Chunking = 65536,
): Promise<unknown> {
  try {
    await decodeAll(input, opts, chunking);
  } catch (err) {
    return err;
  }
  throw new Error('decode did not fail');
}

export function gzip(text: string | Uint8Array): Buffer {
  return gzipSync(typeof text === 'string' ? Buffer.from(text) : text);
}

/** Chunkings every format is checked under: byte by byte, odd sizes, random, whole. */
export const CHUNKINGS: Chunking[] = [1, 7, 'random', 1 << 20];
