/** The stages composed: runPipeline over in-memory components (a test registry), no service and no database. */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ComponentDef } from '../../src/contracts/component.js';
import { InterruptedError, LockedError, SluiceError } from '../../src/core/errors.js';
import type { Batch, Source, TransformContext } from '../../src/core/types.js';
import type { RunSummary } from '../../src/operations/api.js';
import { readDeadLetters } from '../../src/state/dead-letter-file.js';
import { pipelinePaths } from '../../src/state/paths.js';
import { readRunHistory, runHistoryFile } from '../../src/state/run-history.js';
import { acquireRunLock } from '../../src/state/run-lock.js';
import { runPipeline } from '../../src/operations/run.js';
import type { LoadedPipeline } from '../../src/pipeline/load.js';
import type { Registry } from '../../src/pipeline/registry.js';
import { MemorySink, MemorySource, recordingLogger, tempDir, type MemorySinkOptions } from '../support/in-memory.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;

/** A registry whose `memory` source and sinks are these instances, so they outlive a run like real outputs do. */
function world(source: MemorySource, sinks: Record<string, MemorySinkOptions>) {
  const built = new Map(Object.entries(sinks).map(([name, o]) => [name, new MemorySink(name, o)]));
  const def = <K extends 'source' | 'transform' | 'sink'>(kind: K, type: string, create: (c: any) => unknown) =>
    ({ kind, type, description: type, schema: undefined as never, create }) as ComponentDef<K>;
  const registry: Registry = {
    source: [def('source', 'memory', () => source)],
    sink: [def('sink', 'memory', (c: { name: string }) => built.get(c.name))],
    transform: [
      def(
        'transform',
        'reject-odd',
        () =>
          async function* (batches: AsyncIterable<Batch>, ctx: TransformContext) {
            for await (const b of batches)
              yield b.filter((r) => {
                const keep = (r.id as number) % 2 === 0;
                if (!keep)
                  ctx.deadLetter({
                    unit: ctx.unitId,
                    stage: 'transform:reject-odd',
                    reason: 'odd id',
                    raw: JSON.stringify(r),
                  });
                return keep;
              });
          },
      ),
    ],
  };
  const dir = tempDir();
  const pipeline = (extra: Record<string, unknown> = {}): LoadedPipeline =>
    ({
      file: path.join(dir, 'p.yaml'),
      baseDir: dir,
      name: 'mem',
      config: {
        version: 1,
        name: 'mem',
        service: { base_url: 'emulator', api_key: 'memory-key' },
        source: { type: 'memory' },
        sinks: Object.keys(sinks).map((name) => ({ type: 'memory', name })),
        ...extra,
      },
    }) as unknown as LoadedPipeline;
  return { registry, sinks: built, pipeline };
}

const units = [1, 2, 3].map((u) => ({ id: `u${u}`, rows: [{ id: u * 10 }, { id: u * 10 + 1 }] }));

describe('runPipeline', () => {
  it('commits every unit into every sink under run-scoped ids and sums the run up', async () => {
    const source = new MemorySource(units);
    const w = world(source, { a: {}, b: {} });
    const summary = await runPipeline(w.pipeline(), quiet, { registry: w.registry, log: recordingLogger() });
    expect(summary).toMatchObject({
      pipeline: 'mem',
      units: { total: 3, done: 3, skipped: 0, failed: 0 },
      records: 6,
      deadLetters: 0,
      nativeLoads: 0,
      nativeFallbacks: 0,
      outputs: ['memory a', 'memory b'],
    });
    for (const s of w.sinks.values()) {
      expect(s.rows.size).toBe(3);
      expect([...s.rows.keys()].every((id) => /^\d{17}-[0-9a-f]{6}\/u\d$/.test(id))).toBe(true);
      expect(s.finished && s.closed).toBe(true);
    }
    expect(source.closed).toBe(true);
    // The run completed: the next invocation is a new run, which reads the units again under its own id.
    await runPipeline(w.pipeline(), quiet, { registry: w.registry, log: recordingLogger() });
    expect(w.sinks.get('a')!.rows.size).toBe(6);
  });

  it('resumes a failed run under its id: committed units are skipped, the rest read', async () => {
    const source = new MemorySource(units, { concurrency: 1 });
    const w = world(source, { a: {} });
    const crash = (u: { id: string }): void => {
      if (u.id === 'u2') throw new Error('killed after committing u2');
    };
    const err = (await runPipeline(w.pipeline(), quiet, {
      registry: w.registry,
      log: recordingLogger(),
      afterCommit: crash,
    }).catch((e: unknown) => e)) as SluiceError & { summary: RunSummary };
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.message).toBe('killed after committing u2');
    expect(err.hint).toMatch(/committed units are kept and skipped/);
    expect(err.summary.units).toMatchObject({ total: 3, done: 1, failed: 1 });
    expect(w.sinks.get('a')!.finished).toBe(false);

    const log = recordingLogger();
    const summary = await runPipeline(w.pipeline(), quiet, { registry: w.registry, log });
    expect(log.lines[0]).toMatch(/^info: resuming mem \(run \d{17}-[0-9a-f]{6}\)$/);
    expect(summary.units).toEqual({ total: 3, done: 3, skipped: 2, failed: 0 });
    expect(source.reads).toEqual(['u1', 'u2', 'u3']);
    expect(w.sinks.get('a')!.rows.size).toBe(3);
  });

  it('writes transform rejections to the dead-letter file with their step, ordinal and unit params', async () => {
    const source = new MemorySource([{ id: 'u1', rows: [{ id: 1 }, { id: 2 }, { id: 3 }], params: { page: 1 } }]);
    const w = world(source, { a: {} });
    const p = w.pipeline({ transforms: [{ type: 'reject-odd' }] });
    const summary = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    expect(summary).toMatchObject({ records: 1, deadLetters: 2 });
    const letters = await readDeadLetters(pipelinePaths(p).deadLetterFile);
    expect(letters.map((d) => [d.step, d.index, d.unit_params, d.raw])).toEqual([
      [0, 0, { page: 1 }, '{"id":1}'],
      [0, 1, { page: 1 }, '{"id":3}'],
    ]);
  });

  it('counts and tells a native refusal, and the refused unit still lands', async () => {
    const source = new MemorySource(units, { rawFormat: 'jsonl' });
    const w = world(source, {
      a: { nativeFormats: ['jsonl'], refuse: (f) => (f.path.includes('u2') ? 'bad line 1' : undefined) },
    });
    const log = recordingLogger();
    const summary = await runPipeline(w.pipeline(), quiet, { registry: w.registry, log });
    expect(summary).toMatchObject({ records: 6, nativeLoads: 2, nativeFallbacks: 1 });
    expect(log.lines).toContain('warn: unit u2: memory a refused the file (bad line 1); decoding it in JS');
    expect(w.sinks.get('a')!.rows.size).toBe(3);
  });

  it('reads through the JS path with fast_path: false', async () => {
    const source = new MemorySource(units, { rawFormat: 'jsonl' });
    const w = world(source, { a: { nativeFormats: ['jsonl'] } });
    await runPipeline(w.pipeline({ fast_path: false }), quiet, { registry: w.registry, log: recordingLogger() });
    expect(source.rawFiles).toEqual([]);
    expect(source.reads.sort()).toEqual(['u1', 'u2', 'u3']);
  });

  it('runs a replacement source (dead-letter replay) instead of the pipeline’s', async () => {
    const replacement: Source = new MemorySource([{ id: 'replay:1', rows: [{ id: 8 }] }]);
    const w = world(new MemorySource(units), { a: {} });
    const summary = await runPipeline(w.pipeline(), quiet, {
      registry: w.registry,
      log: recordingLogger(),
      source: replacement,
      runId: 'replay-1',
    });
    expect(summary.records).toBe(1);
    expect([...w.sinks.get('a')!.rows.keys()]).toEqual(['replay-1/replay:1']);
  });

  it('holds the state lock while it runs: a second run of the pipeline fails naming it, and it is released at the end', async () => {
    const controller = new AbortController();
    let started!: () => void;
    const reading = new Promise<void>((resolve) => (started = resolve));
    const source = new MemorySource(units, { concurrency: 1, hang: ['u2'], onRead: (id) => id === 'u2' && started() });
    const w = world(source, { a: {} });
    // A held read is abandoned when the interrupt's grace is spent: a short one, so the test does not wait 20 s.
    const p = w.pipeline({ limits: { interrupt_grace_s: 0.5 } });
    const first = runPipeline(
      p,
      { ...quiet, signal: controller.signal, command: 'sluice run first' },
      {
        registry: w.registry,
        log: recordingLogger(),
      },
    ).catch((e: unknown) => e);
    await reading;
    const second = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() }).catch((e) => e);
    expect(second).toBeInstanceOf(LockedError);
    expect((second as LockedError).exitCode).toBe(3);
    expect((second as LockedError).message).toContain(`${pipelinePaths(p).lockFile} is locked by pid ${process.pid}`);
    expect((second as LockedError).message).toContain('(sluice run first)');
    controller.abort('SIGINT');
    expect(await first).toBeInstanceOf(InterruptedError);
    expect(existsSync(pipelinePaths(p).lockFile)).toBe(false);
  });

  it('locks each sink’s output before opening it and releases it with the state lock when it fails', async () => {
    const lockPath = path.join(tempDir(), 'out', '.sluice-lock');
    const w = world(new MemorySource(units), { a: { lockPath } });
    const p = w.pipeline();
    mkdirSync(path.dirname(lockPath));
    const other = await acquireRunLock(lockPath, { command: 'sluice run other.yaml', log: recordingLogger() });
    const err = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() }).catch((e) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect((err as LockedError).message).toContain('(sluice run other.yaml)');
    expect(w.sinks.get('a')!.opened).toBeUndefined();
    expect(existsSync(pipelinePaths(p).lockFile)).toBe(false);
    await other.release();
    const summary = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    expect(summary.units.done).toBe(3);
    expect(existsSync(lockPath)).toBe(false);
  });

  it('fails before taking anything when a sink cannot be built: no lock, no run recorded', async () => {
    const w = world(new MemorySource(units), { a: {} });
    const p = w.pipeline();
    const create = w.registry.sink[0]!.create;
    w.registry.sink[0] = {
      ...w.registry.sink[0]!,
      create: () => {
        throw new SluiceError('sinks[0]: cannot be built', { hint: 'fix it' });
      },
    };
    const err = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() }).catch((e) => e);
    expect((err as Error).message).toBe('sinks[0]: cannot be built');
    // The pipeline is built before any lock is taken or any state opened: the failure is the config's, not a run's.
    expect(await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir), { asWritten: true })).toEqual([]);
    expect(existsSync(pipelinePaths(p).lockFile)).toBe(false);
    w.registry.sink[0] = { ...w.registry.sink[0]!, create };
    expect((await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() })).units.done).toBe(3);
  });

  it('on an interrupt stops taking units, abandons the read in flight, and says how far it got; a rerun resumes', async () => {
    const controller = new AbortController();
    const source = new MemorySource(units, {
      concurrency: 1,
      hang: ['u2'],
      onRead: (id) => id === 'u2' && controller.abort('SIGTERM'),
    });
    const w = world(source, { a: {} });
    // A held read is abandoned when the interrupt's grace is spent: a short one, so the test does not wait 20 s.
    const p = w.pipeline({ limits: { interrupt_grace_s: 0.5 } });
    const log = recordingLogger();
    const err = (await runPipeline(p, { ...quiet, signal: controller.signal }, { registry: w.registry, log }).catch(
      (e: unknown) => e,
    )) as InterruptedError & { summary: RunSummary };
    expect(err).toBeInstanceOf(InterruptedError);
    expect(err.message).toBe('interrupted: 1/3 units committed; run again to resume');
    expect(err.exitCode).toBe(143);
    expect(err.summary.units).toMatchObject({ total: 3, done: 1, failed: 0 });
    expect(log.lines).toContain('info: unit u2 abandoned: the run was interrupted');
    expect(source.reads).toEqual(['u1', 'u2']);
    expect(w.sinks.get('a')!.finished).toBe(false);
    expect(w.sinks.get('a')!.closed).toBe(true);
    expect(existsSync(pipelinePaths(p).lockFile)).toBe(false);

    const again = new MemorySource(units);
    const summary = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger(), source: again });
    expect(summary.units).toEqual({ total: 3, done: 3, skipped: 1, failed: 0 });
    expect(again.reads.sort()).toEqual(['u2', 'u3']);
    expect(w.sinks.get('a')!.rows.size).toBe(3);
  });

  it('lets a unit whose commit is under way when the interrupt comes finish its commit (SIGINT: 130)', async () => {
    const controller = new AbortController();
    const w = world(new MemorySource(units, { concurrency: 1 }), {
      a: {
        beforeCommit: (id) => {
          if (id.endsWith('/u1')) controller.abort('SIGINT');
        },
      },
    });
    const err = (await runPipeline(
      w.pipeline(),
      { ...quiet, signal: controller.signal },
      {
        registry: w.registry,
        log: recordingLogger(),
      },
    ).catch((e: unknown) => e)) as InterruptedError;
    expect(err.exitCode).toBe(130);
    expect(err.message).toBe('interrupted: 1/3 units committed; run again to resume');
    expect([...w.sinks.get('a')!.rows.keys()].map((id) => id.split('/')[1])).toEqual(['u1']);
  });
});
