import { describe, expect, it } from 'vitest';
import { ServiceError, createClient } from '../../../src/client/index.js';
import { startEmulator } from '../../../src/emulator/server.js';
import { DecodeError, SluiceError, TransientError } from '../../../src/core/errors.js';
import { LimitExceeded } from '../../../src/core/limits.js';
import { RetryPolicy } from '../../../src/core/retry.js';
import type { WorkUnit } from '../../../src/core/types.js';
import { runUnit, type RunUnitOptions } from '../../../src/engine/stages/run-unit.js';
import { counters, MemorySource, recordingLogger } from '../in-memory.js';

const unit: WorkUnit = { id: 'u1', params: {} };
const scoped: WorkUnit = { id: 'r/u1', params: {} };

/** Attempts that throw the given errors in turn, then succeed. */
function options(errors: unknown[], over: Partial<RunUnitOptions> = {}) {
  const queue = [...errors];
  let attempts = 0;
  const log = recordingLogger();
  const opts: RunUnitOptions = {
    retry: new RetryPolicy({ attempts: 4, baseMs: 1, maxMs: 2 }),
    log,
    counters: counters(),
    signal: new AbortController().signal,
    source: new MemorySource([]),
    attempt: async () => {
      attempts++;
      const err = queue.shift();
      if (err !== undefined) throw err;
    },
    ...over,
  };
  return { opts, log, attempts: () => attempts };
}

describe('runUnit', () => {
  it('reads a unit again after a transient failure, counting and logging the retry', async () => {
    const { opts, log, attempts } = options([new TransientError('503 from the service')]);
    await runUnit(unit, scoped, [], opts);
    expect(attempts()).toBe(2);
    expect(opts.counters.retries).toBe(1);
    expect(log.lines.some((l) => /^warn: unit u1: 503 from the service; reading it again in \d+ ms$/.test(l))).toBe(
      true,
    );
  });

  it('fails at once on an error nobody classified as transient', async () => {
    const terminal = new Error('sink schema mismatch');
    const { opts, attempts } = options([terminal]);
    await expect(runUnit(unit, scoped, [], opts)).rejects.toBe(terminal);
    expect(attempts()).toBe(1);
    expect(opts.counters.retries).toBe(0);
  });

  it('gives up after the policy’s attempts, with the last error', async () => {
    const errs = [1, 2, 3, 4].map((i) => new TransientError(`busy ${i}`));
    const { opts, attempts } = options(errs);
    await expect(runUnit(unit, scoped, [], opts)).rejects.toBe(errs[3]);
    expect(attempts()).toBe(4);
    expect(opts.counters.retries).toBe(3);
  });

  it('says so when the bytes came cut short on every attempt', async () => {
    const errs = [1, 2, 3, 4].map(() => new DecodeError('u1', 10, 'truncated gzip'));
    const { opts } = options(errs);
    const err = (await runUnit(unit, scoped, [], opts).catch((e: unknown) => e)) as SluiceError;
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.hint).toMatch(/read 4 times and its bytes were cut short or corrupt every time/);
    expect(err.cause).toBe(errs[3]);
  });

  it('tries nothing again once the run is aborted', async () => {
    const abort = new AbortController();
    abort.abort();
    const busy = new TransientError('busy');
    const { opts, attempts } = options([busy], { signal: abort.signal });
    await expect(runUnit(unit, scoped, [], opts)).rejects.toBe(busy);
    expect(attempts()).toBe(1);
  });

  it('an attempt past timeoutMs: its signal aborts its reads, and the unit fails at once with the limit named', async () => {
    let tries = 0;
    const { opts } = options([], {
      timeoutMs: 100,
      // A read that only ends when its signal aborts (a drip-fed body).
      attempt: async (_u, _s, _sinks, _source, signal) => {
        tries++;
        await new Promise<void>((_, reject) =>
          signal.addEventListener('abort', () => reject(new Error('socket closed'))),
        );
      },
    });
    const err = (await runUnit(unit, scoped, [], opts).catch((e: unknown) => e)) as LimitExceeded;
    expect(err).toBeInstanceOf(LimitExceeded);
    expect(err.message).toBe(
      'u1: not read and committed within 0.1 s (limits.unit_timeout_s); its reads were cancelled and nothing of it was committed',
    );
    // The service would drip again: not retried.
    expect(tries).toBe(1);
  });

  it('cancel (an interrupt whose grace is spent) aborts the attempt in flight with its reason', async () => {
    const cancel = new AbortController();
    const reason = new SluiceError('abandoned');
    const { opts } = options([], {
      cancel: cancel.signal,
      signal: cancel.signal,
      attempt: async (_u, _s, _sinks, _source, signal) => {
        cancel.abort(reason);
        signal.throwIfAborted();
      },
    });
    await expect(runUnit(unit, scoped, [], opts)).rejects.toBe(reason);
  });

  it('one budget per cause: a request the client retried to its end is not asked again by the unit', async () => {
    const emu = await startEmulator({
      seed: 1,
      faults: { rules: [{ route: 'GET /countrieslist', rate: 1, faults: { '503': 1 } }] },
    });
    const client = createClient({
      baseUrl: emu.url,
      apiKey: 'emulator-key',
      retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    try {
      const { opts } = options([], {
        attempt: async () => {
          await client.zones.countries();
        },
      });
      const err = await runUnit(unit, scoped, [], opts).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 503 });
      expect(err).toBeInstanceOf(ServiceError);
      // The client's 3 tries, once: not 3 × the unit's 4 attempts.
      expect(emu.stats.routes['GET /countrieslist']).toBe(3);
      expect(opts.counters.retries).toBe(0);
    } finally {
      await client.close();
      await emu.close();
    }
  });
});
