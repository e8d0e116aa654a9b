import { describe, expect, it } from 'vitest';
import type { Batch } from '../../src/core/types.js';
import { tee } from '../../src/unit/tee.js';

async function* gen(n: number, onPull?: (i: number) => void): AsyncIterable<Batch> {
  for (let i = 0; i < n; i++) {
    onPull?.(i);
    yield [{ i }];
  }
}

async function collect(it: AsyncIterable<Batch>): Promise<number[]> {
  const out: number[] = [];
  for await (const b of it) out.push(...b.map((r) => r.i as number));
  return out;
}

describe('tee', () => {
  it('gives every consumer every batch in order', async () => {
    const [a, b, c] = tee(gen(50), 3);
    const [ra, rb, rc] = await Promise.all([collect(a!), collect(b!), collect(c!)]);
    const want = Array.from({ length: 50 }, (_, i) => i);
    expect(ra).toEqual(want);
    expect(rb).toEqual(want);
    expect(rc).toEqual(want);
  });

  it('does not run ahead of the slowest consumer by more than the high-water mark', async () => {
    let pulled = 0;
    const [fast, slow] = tee(
      gen(100, () => pulled++),
      2,
      4,
    );
    const fastDone = collect(fast!);
    await new Promise((r) => setTimeout(r, 20));
    // The slow consumer has read nothing yet: the producer is held back.
    expect(pulled).toBeLessThanOrEqual(6);
    const slowAll = await collect(slow!);
    expect(await fastDone).toHaveLength(100);
    expect(slowAll).toHaveLength(100);
  });

  it('propagates a source error to every consumer', async () => {
    async function* bad(): AsyncIterable<Batch> {
      yield [{ i: 0 }];
      throw new Error('boom');
    }
    const [a, b] = tee(bad(), 2);
    await expect(collect(a!)).rejects.toThrow('boom');
    await expect(collect(b!)).rejects.toThrow('boom');
  });

  it('passes a single consumer through untouched', () => {
    const src = gen(1);
    expect(tee(src, 1)[0]).toBe(src);
  });
});
