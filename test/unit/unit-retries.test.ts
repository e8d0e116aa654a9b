import { describe, expect, it } from 'vitest';
import { ServiceError, createClient } from '../../src/client/index.js';
import { startEmulator } from '../../src/emulator/server.js';
import { DecodeError, SluiceError, TransientError } from '../../src/core/errors.js';
import { LimitExceeded } from '../../src/core/limits.js';
import { RetryPolicy } from '../../src/core/retry.js';
import type { Batch, SourceContext, UnitEnd, WorkUnit } from '../../src/core/types.js';
import { EVOLVE } from '../../src/schema/contract.js';
import { runUnits, type RunUnitsOptions } from '../../src/unit/run-units.js';
import { UnitPath } from '../../src/unit/unit-path.js';
import { counters, MemorySink, MemorySource, recordingLogger, sourceContext, tempDir } from '../support/in-memory.js';

/**
 * One unit `u1` whose read runs `attempt` (with the attempt's signal) each time it is read: the tries of a unit
 * (src/unit/run-units.ts) are what is tested, through the real unit path into a memory sink.
 */
class TriedSource extends MemorySource {
  constructor(private readonly attempt: (signal: AbortSignal) => Promise<void>) {
    super([{ id: 'u1', rows: [{ id: 1 }] }], { concurrency: 1 });
  }

  override async *read(unit: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd> {
    await this.attempt(ctx.signal);
    return yield* super.read(unit, ctx);
  }
}

/** Attempts that throw the given errors in turn, then succeed. */
function failing(errors: unknown[]): { attempt: (signal: AbortSignal) => Promise<void>; attempts: () => number } {
  const queue = [...errors];
  let attempts = 0;
  return {
    attempt: async () => {
      attempts++;
      const err = queue.shift();
      if (err !== undefined) throw err;
    },
    attempts: () => attempts,
  };
}

/** Runs the one unit; resolves to the unit's failure (undefined: committed). */
async function runUnit(
  attempt: (signal: AbortSignal) => Promise<void>,
  over: Partial<RunUnitsOptions> = {},
): Promise<{ failure: unknown; log: ReturnType<typeof recordingLogger>; retries: number; sink: MemorySink }> {
  const source = new TriedSource(attempt);
  const sink = new MemorySink('s');
  const ctx = sourceContext();
  const log = recordingLogger();
  const c = counters();
  const result = await runUnits({
    runId: 'r',
    planned: await source.plan(ctx),
    path: new UnitPath({
      source,
      context: (signal) => ({ ...ctx, signal }),
      transforms: [],
      sinks: [{ sink, contract: EVOLVE, unstorable: 'dead_letter' }],
      fastPath: true,
      tmpDir: tempDir(),
      log,
      counters: counters(),
      deadLetter: ctx.deadLetter,
    }),
    source,
    context: ctx,
    sinks: [sink],
    retry: new RetryPolicy({ attempts: 4, baseMs: 1, maxMs: 2 }),
    log,
    counters: c,
    signal: new AbortController().signal,
    ...over,
  });
  return { failure: result.failure, log, retries: c.retries, sink };
}

describe('a unit’s tries', () => {
  it('reads a unit again after a transient failure, counting and logging the retry', async () => {
    const { attempt, attempts } = failing([new TransientError('503 from the service')]);
    const { failure, log, retries, sink } = await runUnit(attempt);
    expect(failure).toBeUndefined();
    expect(sink.committed.has('r/u1')).toBe(true);
    expect(attempts()).toBe(2);
    expect(retries).toBe(1);
    expect(log.lines.some((l) => /^warn: unit u1: 503 from the service; reading it again in \d+ ms$/.test(l))).toBe(
      true,
    );
  });

  it('fails at once on an error nobody classified as transient', async () => {
    const terminal = new Error('sink schema mismatch');
    const { attempt, attempts } = failing([terminal]);
    const { failure, retries } = await runUnit(attempt);
    expect(failure).toBe(terminal);
    expect(attempts()).toBe(1);
    expect(retries).toBe(0);
  });

  it('gives up after the policy’s attempts, with the last error', async () => {
    const errs = [1, 2, 3, 4].map((i) => new TransientError(`busy ${i}`));
    const { attempt, attempts } = failing(errs);
    const { failure, retries } = await runUnit(attempt);
    expect(failure).toBe(errs[3]);
    expect(attempts()).toBe(4);
    expect(retries).toBe(3);
  });

  it('says so when the bytes came cut short on every attempt', async () => {
    const errs = [1, 2, 3, 4].map(() => new DecodeError('u1', 10, 'truncated gzip'));
    const err = (await runUnit(failing(errs).attempt)).failure as SluiceError;
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.hint).toMatch(/read 4 times and its bytes were cut short or corrupt every time/);
    expect(err.cause).toBe(errs[3]);
  });

  it('tries nothing again once the run is aborted', async () => {
    const run = new AbortController();
    const busy = new TransientError('busy');
    let attempts = 0;
    // The run is interrupted while the first attempt reads; its transient failure is not tried again.
    const { failure } = await runUnit(
      async () => {
        attempts++;
        run.abort('SIGINT');
        throw busy;
      },
      { signal: run.signal },
    );
    expect(failure).toBe(busy);
    expect(attempts).toBe(1);
  });

  it('an attempt past timeoutMs: its signal aborts its reads, and the unit fails at once with the limit named', async () => {
    let tries = 0;
    // A read that only ends when its signal aborts (a drip-fed body).
    const drip = async (signal: AbortSignal): Promise<void> => {
      tries++;
      await new Promise<void>((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error('socket closed'))),
      );
    };
    const err = (await runUnit(drip, { timeoutMs: 100 })).failure as LimitExceeded;
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
    const abandon = async (signal: AbortSignal): Promise<void> => {
      cancel.abort(reason);
      signal.throwIfAborted();
    };
    const { failure, log } = await runUnit(abandon, { cancel: cancel.signal, signal: cancel.signal });
    expect(failure).toBe(reason);
    // Interrupted: the unit is left for the next run, not counted as failed.
    expect(log.lines).toContain('info: unit u1 abandoned: the run was interrupted');
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
      const { failure: err, retries } = await runUnit(async () => {
        await client.zones.countries();
      });
      expect(err).toMatchObject({ status: 503 });
      expect(err).toBeInstanceOf(ServiceError);
      // The client's 3 tries, once: not 3 × the unit's 4 attempts.
      expect(emu.stats.routes['GET /countrieslist']).toBe(3);
      expect(retries).toBe(0);
    } finally {
      await client.close();
      await emu.close();
    }
  });
});
