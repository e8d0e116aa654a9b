/** `--fresh` into `append` outputs that hold earlier runs' units (operations/fresh-guard.ts), through runPipeline. */
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { pipelinePaths } from '../../src/state/paths.js';
import { readRunHistory, runHistoryFile } from '../../src/state/run-history.js';
import { runPipeline } from '../../src/operations/run.js';
import { MemorySource, recordingLogger } from '../support/in-memory.js';
import { memoryPipeline, quiet } from '../support/memory-pipeline.js';

const units = [1, 2, 3].map((u) => ({ id: `u${u}`, rows: [{ id: u * 10 }] }));

describe('--fresh into outputs that append', () => {
  it('refuses (exit 2) before the plan, naming the output and what it holds; the unfinished run stays resumable', async () => {
    const boom = new SluiceError('u2: the service said no');
    const source = new MemorySource(units, { concurrency: 1, failures: { u2: [boom] } });
    // The plan is where a source pays (a filter job): counted.
    let plans = 0;
    const plan = source.plan.bind(source);
    source.plan = (ctx) => (plans++, plan(ctx));
    const w = memoryPipeline(source, { a: {}, m: {} });
    // `a` appends; `m` merges (its rows cannot come twice): only `a` is named.
    const p = w.pipeline({
      transforms: [],
      sinks: [
        { type: 'memory', name: 'a', write: 'append' },
        { type: 'memory', name: 'm', write: 'merge' },
      ],
    });
    const hooks = { registry: w.registry, log: recordingLogger() };
    await expect(runPipeline(p, quiet, hooks)).rejects.toThrow(/said no/);
    const [planned, read] = [plans, source.reads.length];

    const err = await runPipeline(p, { ...quiet, fresh: true }, hooks).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(
      /^--fresh would read every unit again and append its records a second time beside those already loaded:\n {2}memory a \(write: append\) holds 1 unit\(s\) committed by 1 earlier run\(s\), the last \d{17}-[0-9a-f]{6}$/,
    );
    expect((err as SluiceError).hint).toContain('--allow-duplicates');
    expect([plans, source.reads.length], 'nothing planned, nothing read').toEqual([planned, read]);

    // Without --fresh, the unfinished run resumes: its committed units are skipped.
    const resumed = await runPipeline(p, quiet, hooks);
    expect(resumed.units).toMatchObject({ total: 3, skipped: 1, failed: 0 });
    const history = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    expect(history.map((r) => [r.status, r.exitCode])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['succeeded', 0],
    ]);
    expect(history[2]!.run).toBe(history[0]!.run);

    // Confirmed: a new run loads every unit again beside the old ones.
    const again = await runPipeline(p, { ...quiet, fresh: true, allowDuplicates: true }, hooks);
    expect(again).toMatchObject({ records: 3, units: { total: 3, skipped: 0 } });
    expect(w.sinks.get('a')!.committed.size).toBe(6);
  });
});
