import { describe, expect, it, vi } from 'vitest';
import { companyRecord, toJsonl } from '../../bench/lib/company-records.js';
import { DecodeError, NetworkError } from '../../src/core/errors.js';
import { decode } from '../../src/decode/index.js';
import { decompressed } from '../../src/decode/gunzip.js';
import { chunks, decodeAll, decodeError, gzip } from './helpers.js';

async function bytesOf(input: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of decompressed(input, 'u')) out.push(c);
  return Buffer.concat(out);
}

const text = toJsonl(Array.from({ length: 40 }, (_, i) => companyRecord(i, 5)));

describe('gzip detection and decompression', () => {
  it('gunzips by magic bytes and passes other bytes through, whatever the chunking', async () => {
    const small = text.slice(0, 20_000);
    for (const chunking of [1, 2, 3, 'random', 1 << 20] as const) {
      expect((await bytesOf(chunks(gzip(small), chunking))).toString()).toBe(small);
      expect((await bytesOf(chunks(Buffer.from(small), chunking))).toString()).toBe(small);
    }
  });

  it('passes through a one-byte input that merely starts like gzip', async () => {
    expect([...(await bytesOf(chunks(Buffer.from([0x1f]), 1)))]).toEqual([0x1f]);
  });

  it('reads concatenated gzip members as one stream', async () => {
    const joined = Buffer.concat([gzip('{"a":1}\n'), gzip('{"a":2}\n'), gzip('{"a":3}\n')]);
    const { rows } = await decodeAll(joined, { format: 'jsonl' }, 5);
    expect(rows).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
  });

  it('fails on a truncated gzip stream with the compressed offset where it ends', async () => {
    const whole = gzip(text);
    // Cut inside the deflate data, and cut inside the 8-byte trailer: both lose data or its check.
    for (const cut of [Math.floor(whole.length / 2), whole.length - 3]) {
      const err = await decodeError(whole.subarray(0, cut), { format: 'jsonl', unit: 'snap:s:part:1' }, 'random');
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as DecodeError).unit).toBe('snap:s:part:1');
      expect((err as DecodeError).offset).toBe(cut);
      expect((err as DecodeError).message).toMatch(/truncated gzip input.*compressed.*at byte \d+$/);
    }
  });

  it('fails on a truncated second gzip member', async () => {
    const second = gzip('{"a":2}\n');
    const input = Buffer.concat([gzip('{"a":1}\n'), second.subarray(0, 12)]);
    const err = await decodeError(input, { format: 'jsonl' });
    expect(err).toBeInstanceOf(DecodeError);
    expect((err as DecodeError).offset).toBe(input.length);
  });

  it('fails on corrupt gzip data naming the compressed range', async () => {
    const bad = Buffer.from(gzip(text));
    bad.fill(0x55, 200, 260);
    const err = await decodeError(bad, { format: 'jsonl' }, 4096);
    expect(err).toBeInstanceOf(DecodeError);
    expect((err as DecodeError).message).toMatch(/corrupt gzip input \(zlib: .+\) in compressed bytes \d+-\d+/);
    expect((err as DecodeError).offset).toBeLessThanOrEqual(4096);
  });

  it('lets an error of the input itself through unchanged, in every format (the client already typed it)', async () => {
    const reset = new NetworkError('socket hang up', { code: 'ECONNRESET', sent: true });
    const csv = `a,b\n${'1,2\n'.repeat(2000)}`;
    for (const [format, body] of [
      ['jsonl', text],
      ['json', `[${text.trim().split('\n').join(',')}]`],
      ['csv', csv],
    ] as const)
      for (const input of [gzip(body), Buffer.from(body)]) {
        async function* failing(): AsyncGenerator<Uint8Array> {
          yield input.subarray(0, 1000);
          throw reset;
        }
        let caught: unknown;
        try {
          for await (const _ of decode(failing(), { format, unit: 'u', deadLetter: () => {} }));
        } catch (err) {
          caught = err;
        }
        expect(caught, format).toBe(reset);
      }
  });

  it('releases the input when the consumer stops early', async () => {
    for (const input of [gzip(text), Buffer.from(text)]) {
      let released = false;
      async function* body(): AsyncGenerator<Uint8Array> {
        try {
          yield* chunks(input, 512);
        } finally {
          released = true;
        }
      }
      for await (const _ of decode(body(), { format: 'jsonl', unit: 'u', deadLetter: () => {}, batchSize: 1 })) break;
      // Through gunzip the release travels the stream pipeline's teardown: it completes a few ticks later.
      await vi.waitFor(() => expect(released).toBe(true), { timeout: 5000 });
    }
  });

  it('releases the input when a bound is passed (an endless body is not left open)', async () => {
    for (const input of [gzip(text), Buffer.from(text)]) {
      let released = false;
      async function* body(): AsyncGenerator<Uint8Array> {
        try {
          for (;;) yield* chunks(input, 512);
        } finally {
          released = true;
        }
      }
      const opts = { format: 'jsonl' as const, unit: 'u', deadLetter: () => {} };
      const err = await (async () => {
        for await (const _ of decode(body(), { ...opts, bounds: { limits: { maxUnitBytes: 4 * input.length } } }));
      })().catch((e: unknown) => e);
      expect((err as Error).message).toMatch(/limits\.max_unit_bytes/);
      await vi.waitFor(() => expect(released).toBe(true), { timeout: 5000 });
    }
  });

  it('hands over batches of a huge single input chunk as they fill', async () => {
    // Every 10th line is bad: the dead letters seen by the first batch show how far decoding went.
    const lines = Array.from({ length: 200 }, (_, i) => (i % 10 === 9 ? '{bad' : JSON.stringify(companyRecord(i, 9))));
    const big = Buffer.from(lines.join('\n') + '\n');
    async function* one(): AsyncGenerator<Uint8Array> {
      yield big;
    }
    let dead = 0;
    const it = decode(one(), { format: 'jsonl', unit: 'u', deadLetter: () => dead++, batchSize: 5 })[
      Symbol.asyncIterator
    ]();
    await it.next();
    // One 64 KiB piece holds ~20 lines, so ~2 bad ones; the whole chunk would have given 20.
    expect(dead).toBeLessThanOrEqual(3);
    await it.return?.();
  });

  it('pulls input only as batches are consumed (bounded read-ahead)', async () => {
    const big = toJsonl(Array.from({ length: 400 }, (_, i) => companyRecord(i, 9)));
    for (const input of [gzip(big), Buffer.from(big)]) {
      let pulled = 0;
      async function* counted(): AsyncGenerator<Uint8Array> {
        for await (const c of chunks(input, 4096)) {
          pulled += c.length;
          yield c;
        }
      }
      const it = decode(counted(), { format: 'jsonl', unit: 'u', deadLetter: () => {}, batchSize: 10 })[
        Symbol.asyncIterator
      ]();
      await it.next();
      // Ten ~3 KB records need ~30 KB of text; allow a few chunks and zlib's buffers, far below the whole input.
      expect(pulled).toBeLessThan(Math.min(input.length / 3, 200_000));
      await it.return?.();
    }
  });
});
