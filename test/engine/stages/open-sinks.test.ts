import { describe, expect, it } from 'vitest';
import { SluiceError, TransientError } from '../../../src/core/errors.js';
import { RetryPolicy } from '../../../src/core/retry.js';
import type { Sink, SinkContext } from '../../../src/core/types.js';
import { openSinks } from '../../../src/engine/stages/open-sinks.js';
import { counters, recordingLogger } from '../in-memory.js';

/** A sink whose `open()` throws the given errors in turn, then succeeds. */
function sink(name: string, errors: unknown[]): Sink & { opens: number } {
  const queue = [...errors];
  const s = {
    opens: 0,
    describe: () => name,
    open: async () => {
      s.opens++;
      const err = queue.shift();
      if (err !== undefined) throw err;
    },
  };
  return s as unknown as Sink & { opens: number };
}

const ctx = {} as SinkContext;

function options() {
  return {
    retry: new RetryPolicy({ attempts: 3, baseMs: 1, maxMs: 2 }),
    log: recordingLogger(),
    counters: counters(),
    signal: new AbortController().signal,
  };
}

describe('openSinks', () => {
  it('opens a sink again after a transient failure, counting and logging the retry', async () => {
    const a = sink('postgres public.t', [new TransientError('the connection to the server was reset')]);
    const b = sink('duckdb out.duckdb', []);
    const opts = options();
    await openSinks([a, b], ctx, opts);
    expect([a.opens, b.opens]).toEqual([2, 1]);
    expect(opts.counters.retries).toBe(1);
    expect(opts.log.lines).toEqual([
      expect.stringMatching(
        /^warn: postgres public\.t: the connection to the server was reset; opening it again in \d+ ms$/,
      ),
    ]);
  });

  it('fails at once on an error that is not transient', async () => {
    const a = sink('postgres public.t', [new SluiceError('password authentication failed')]);
    const opts = options();
    await expect(openSinks([a], ctx, opts)).rejects.toThrow('password authentication failed');
    expect(a.opens).toBe(1);
    expect(opts.counters.retries).toBe(0);
  });

  it('gives up after the policy’s attempts, with the last error', async () => {
    const down = (n: number) => new TransientError(`the server is down (${n})`);
    const a = sink('postgres public.t', [down(1), down(2), down(3), down(4)]);
    const later = sink('jsonl out', []);
    await expect(openSinks([a, later], ctx, options())).rejects.toThrow('the server is down (3)');
    expect([a.opens, later.opens]).toEqual([3, 0]);
  });
});
