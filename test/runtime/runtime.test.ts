/**
 * The runtime (src/runtime/runtime.ts) over in-memory components: what a command takes from it — the pipeline's
 * lock, the outputs' locks and open sinks — is released once, in reverse order, however the command ends; opening a
 * sink that fails transiently is tried again under the pipeline's retry policy.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockedError, SluiceError, TransientError } from '../../src/core/errors.js';
import { PipelineRuntime, withRuntime } from '../../src/runtime/runtime.js';
import { acquireRunLock } from '../../src/state/run-lock.js';
import { counters, MemorySource, recordingLogger } from '../support/in-memory.js';
import { memoryPipeline } from '../support/memory-pipeline.js';

/** A world of two memory sinks whose `open()` throws the given errors in turn, then succeeds. */
function world(errors: Record<string, unknown[]> = {}, lockPath?: string) {
  const w = memoryPipeline(new MemorySource([]), { a: lockPath ? { lockPath } : {}, b: {} });
  const opens: string[] = [];
  for (const [name, sink] of w.sinks) {
    const queue = [...(errors[name] ?? [])];
    const open = sink.open.bind(sink);
    sink.open = async (ctx) => {
      opens.push(name);
      const err = queue.shift();
      if (err !== undefined) throw err;
      return open(ctx);
    };
  }
  const log = recordingLogger();
  const fast = { service: { base_url: 'emulator', api_key: 'k', retry: { base_delay_ms: 1, max_delay_ms: 2 } } };
  const runtime = (): PipelineRuntime =>
    new PipelineRuntime(w.pipeline(fast), {
      command: 'sluice test',
      log,
      registry: w.registry,
    });
  return { ...w, opens, log, runtime, fast };
}

describe('opening the outputs', () => {
  it('opens a sink again after a transient failure, counting and logging the retry', async () => {
    const w = world({ a: [new TransientError('the connection to the server was reset')] });
    const rt = w.runtime();
    const c = counters();
    await rt.openOutputs({ fresh: false, counters: c });
    expect(w.opens).toEqual(['a', 'a', 'b']);
    expect(c.retries).toBe(1);
    expect(w.log.lines).toEqual([
      expect.stringMatching(/^warn: memory a: the connection to the server was reset; opening it again in \d+ ms$/),
    ]);
    await rt.close();
    expect([...w.sinks.values()].map((s) => s.closed)).toEqual([true, true]);
  });

  it('fails at once on an error that is not transient, and closes what it opened', async () => {
    const w = world({ b: [new SluiceError('password authentication failed')] });
    const rt = w.runtime();
    const failure = await rt.openOutputs({ fresh: false }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(SluiceError);
    expect(w.opens).toEqual(['a', 'b']);
    await rt.close(failure);
    // `a` was opened: closed; `b` never opened: never closed.
    expect([w.sinks.get('a')!.closed, w.sinks.get('b')!.closed]).toEqual([true, false]);
  });

  it('gives up after the policy’s attempts, with the last error', async () => {
    const down = (n: number) => new TransientError(`the server is down (${n})`);
    const w = world({ a: [down(1), down(2), down(3), down(4), down(5)] });
    await expect(
      withRuntime(w.pipeline(w.fast), { command: 'sluice test', log: w.log, registry: w.registry }, async (rt) => {
        await rt.openOutputs({ fresh: false });
      }),
    ).rejects.toThrow('the server is down (4)');
    expect(w.opens).toEqual(['a', 'a', 'a', 'a']);
  });
});

describe('locks', () => {
  it('takes the pipeline’s lock, then the outputs’; releases them when the runtime closes, sinks closed first', async () => {
    const dir = memoryPipeline(new MemorySource([]), {}).dir;
    const lockPath = path.join(dir, 'out', '.sluice-lock');
    const w = world({}, lockPath);
    const rt = w.runtime();
    await rt.lockPipeline();
    await rt.openOutputs({ fresh: false });
    expect(existsSync(rt.paths.lockFile)).toBe(true);
    expect(existsSync(lockPath)).toBe(true);
    // Another command finds both taken.
    await expect(acquireRunLock(lockPath, { command: 'other', log: recordingLogger() })).rejects.toBeInstanceOf(
      LockedError,
    );
    const order: string[] = [];
    w.sinks.get('a')!.close = async () => void order.push(`close a (lock held: ${existsSync(lockPath)})`);
    await rt.close();
    expect(order).toEqual(['close a (lock held: true)']);
    expect(existsSync(rt.paths.lockFile)).toBe(false);
    expect(existsSync(lockPath)).toBe(false);
  });

  it('refuses a command while another holds the pipeline’s lock (exit 3), taking nothing', async () => {
    const w = world();
    const first = w.runtime();
    await first.lockPipeline();
    const second = w.runtime();
    const err = await second.lockPipeline().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect((err as LockedError).exitCode).toBe(3);
    await second.close();
    expect(existsSync(first.paths.lockFile)).toBe(true);
    await first.close();
  });
});
