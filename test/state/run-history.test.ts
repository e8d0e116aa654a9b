/** The run history file, and what runPipeline records in it (in-memory components). */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { pipelinePaths } from '../../src/state/paths.js';
import { readRunHistory, RunHistory, runHistoryFile } from '../../src/state/run-history.js';
import { formatRuns } from '../../src/cli/runs-table.js';
import { formatSummary } from '../../src/operations/summary.js';
import { runPipeline } from '../../src/operations/run.js';
import { MemorySource, recordingLogger, tempDir } from '../support/in-memory.js';
import { memoryPipeline, quiet } from '../support/memory-pipeline.js';

describe('RunHistory', () => {
  it('keeps the last line of each attempt, in the order they started', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    const h = new RunHistory(file);
    const a = await h.start({ run: 'r1', pipeline: 'p', resumed: false });
    expect(a).toMatchObject({ run: 'r1', attempt: 1, status: 'running', pid: process.pid });
    await h.end({ ...a, status: 'failed', cause: 'boom' });
    const b = await h.start({ run: 'r1', pipeline: 'p', resumed: true });
    expect(b.attempt).toBe(2);
    await h.end({ ...b, status: 'succeeded' });
    const c = await h.start({ run: 'r2', pipeline: 'p', resumed: false });
    const runs = await readRunHistory(file);
    expect(runs.map((r) => [r.run, r.attempt, r.status])).toEqual([
      ['r1', 1, 'failed'],
      ['r1', 2, 'succeeded'],
      ['r2', 1, 'running'],
    ]);
    expect(runs[0]!.endedAt).toBeDefined();
    expect(c.endedAt).toBeUndefined();
    // Two lines per ended attempt, one per running one: appended, never rewritten.
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(5);
  });

  it('marks an attempt left running (its process was killed) crashed when the next one starts', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    await new RunHistory(file).start({ run: 'r1', pipeline: 'p', resumed: false });
    // A kill -9 mid-write leaves half a line: skipped.
    appendFileSync(file, '{"run":"r1","attem');
    appendFileSync(file, '\n');
    const next = await new RunHistory(file).start({ run: 'r1', pipeline: 'p', resumed: true });
    expect(next.attempt).toBe(2);
    const runs = await readRunHistory(file);
    expect(runs.map((r) => [r.attempt, r.status])).toEqual([
      [1, 'crashed'],
      [2, 'running'],
    ]);
    expect(runs[0]!.cause).toMatch(/ended without recording an outcome/);
  });

  it('writes what a killed attempt paid for on the line that marks it crashed, as its run’s ledger says', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    await new RunHistory(file).start({ run: 'r1', pipeline: 'p', resumed: false });
    const paid = {
      paidCalls: 3,
      recordsCharged: 0,
      paid: [{ kind: 'request' as const, for: 'review page', calls: 3, retried: 0, wasted: 0 }],
    };
    await new RunHistory(file).start({ run: 'r1', pipeline: 'p', resumed: true }, (crashed) =>
      crashed.run === 'r1' && crashed.attempt === 1 ? paid : undefined,
    );
    const [killed, next] = await readRunHistory(file);
    expect(killed).toMatchObject({ attempt: 1, status: 'crashed', ...paid });
    expect(next!.paidCalls).toBeUndefined();
  });

  it('reads an attempt left running by a process gone from this host as crashed at once', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    const h = new RunHistory(file);
    const mine = await h.start({ run: 'r1', pipeline: 'p', resumed: false });
    // The same attempt as a container's previous process wrote it: same host and pid, another start time.
    const gone = { ...mine, run: 'r0', start: String(Number(mine.start) - 1) };
    // Another host's attempt: nothing here can tell, so it stays running.
    const remote = { ...mine, run: 'r2', host: 'node-7' };
    appendFileSync(file, [gone, remote].map((r) => JSON.stringify(r) + '\n').join(''));
    const runs = await readRunHistory(file);
    expect(runs.map((r) => [r.run, r.status])).toEqual([
      ['r1', 'running'],
      ['r0', 'crashed'],
      ['r2', 'running'],
    ]);
    expect(mine.start, 'the attempt records its start time beside its pid').toBeDefined();
  });

  it('skips lines that are not a run record (cut short, `null`, a number, a list) and reads the rest', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    const h = new RunHistory(file);
    const a = await h.start({ run: 'r1', pipeline: 'p', resumed: false });
    appendFileSync(file, 'null\n42\n[]\n"text"\n{"run": "r1", "attem\n');
    await h.end({ ...a, status: 'succeeded' });
    expect((await readRunHistory(file)).map((r) => [r.run, r.attempt, r.status])).toEqual([['r1', 1, 'succeeded']]);
  });

  it('reads a missing file as no runs', async () => {
    expect(await readRunHistory(path.join(tempDir(), 'none.jsonl'))).toEqual([]);
  });
});

const units = [1, 2, 3].map((u) => ({ id: `u${u}`, rows: [{ id: u * 10 }, { id: u * 10 + 1 }] }));

describe('runPipeline records each attempt', () => {
  it('a success: counts, dead letters with reasons, per-sink committed units', async () => {
    const w = memoryPipeline(new MemorySource(units), { a: {}, b: { committed: [] } });
    const p = w.pipeline();
    const summary = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    const [run] = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    expect(run).toMatchObject({
      pipeline: 'mem',
      attempt: 1,
      status: 'succeeded',
      exitCode: 0,
      resumed: false,
      units: { committed: 3, skipped: 0, failed: 0, total: 3 },
      records: 3,
      deadLetters: 3,
      deadLetterReasons: [{ reason: 'odd id', count: 3 }],
      paidJobs: [],
      sinks: [
        { sink: 'memory a', committedUnits: 3 },
        { sink: 'memory b', committedUnits: 3 },
      ],
    });
    expect(run!.cause).toBeUndefined();
    expect(Date.parse(run!.endedAt!)).toBeGreaterThanOrEqual(Date.parse(run!.startedAt));
    expect(summary.records).toBe(run!.records);
  });

  it('records what was committed, and apart from it what tries that failed had read', async () => {
    let failed = false;
    const w = memoryPipeline(new MemorySource(units, { concurrency: 1 }), {
      a: {
        // u2's first try reads its rows, then its commit fails on a transient error: the unit is read again.
        beforeCommit: (id) => {
          if (id.endsWith('/u2') && !failed) {
            failed = true;
            throw Object.assign(new Error('connection reset while committing'), { transient: true });
          }
        },
      },
      b: {},
    });
    const p = w.pipeline({ service: { base_url: 'emulator', api_key: 'memory-key', retry: { base_delay_ms: 1 } } });
    const summary = await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    const [run] = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    // One row of each unit passes the transform: 3 committed, once each, in both sinks; u2's was read twice.
    expect([...w.sinks.get('a')!.rows.values()].flat()).toHaveLength(3);
    expect(summary).toMatchObject({ records: 3, recordsRead: 4, retries: 1 });
    expect(run).toMatchObject({
      records: 3,
      recordsRead: 4,
      sinks: [
        { sink: 'memory a', committedUnits: 3, records: 3 },
        { sink: 'memory b', committedUnits: 3, records: 3 },
      ],
    });
    expect(formatSummary(summary)).toContain(
      'records      3 committed (4 read: 1 in tries that failed or were not committed)',
    );
    expect(formatRuns([run!])).toContain(
      '    records: 3 committed, 4 read (1 in tries that failed or were not committed)',
    );
  });

  it('a failure, then the resumed attempt that completes the same run', async () => {
    const boom = new SluiceError('u2: the service said no\nsecond line');
    const w = memoryPipeline(new MemorySource(units, { concurrency: 1, failures: { u2: [boom] } }), { a: {} });
    const p = w.pipeline();
    await expect(runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() })).rejects.toThrow(/said no/);
    await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    const runs = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    expect(runs).toHaveLength(2);
    expect(runs[1]!.run).toBe(runs[0]!.run);
    expect(runs[0]).toMatchObject({
      attempt: 1,
      status: 'failed',
      cause: 'u2: the service said no',
      exitCode: 1,
      units: { committed: 1, failed: 1, total: 3 },
      sinks: [{ sink: 'memory a', committedUnits: 1 }],
    });
    expect(runs[1]).toMatchObject({
      attempt: 2,
      status: 'succeeded',
      resumed: true,
      units: { committed: 2, skipped: 1, failed: 0, total: 3 },
      sinks: [{ sink: 'memory a', committedUnits: 2 }],
    });
  });

  it('an interrupt', async () => {
    const controller = new AbortController();
    const source = new MemorySource(units, {
      concurrency: 1,
      hang: ['u2'],
      onRead: (id) => id === 'u2' && controller.abort('SIGTERM'),
    });
    const w = memoryPipeline(source, { a: {} });
    // A held read is abandoned when the interrupt's grace is spent: a short one, so the test does not wait 20 s.
    const p = w.pipeline({ limits: { interrupt_grace_s: 0.5 } });
    await expect(
      runPipeline(p, { ...quiet, signal: controller.signal }, { registry: w.registry, log: recordingLogger() }),
    ).rejects.toThrow(/interrupted/);
    const [run] = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    expect(run).toMatchObject({ status: 'interrupted', exitCode: 143, units: { committed: 1 } });
    expect(run!.cause).toMatch(/^interrupted: 1\/3 units committed; run again to resume$/);
  });

  it('the paid jobs the run ledger lists, and what the attempt paid for', async () => {
    const w = memoryPipeline(new MemorySource(units), { a: {} });
    const p = w.pipeline();
    const source = new MemorySource(units);
    source.plan = async function (this: MemorySource, ctx) {
      await ctx.paid.paid({ kind: 'filter', for: 'filter job', job: 'snap_1', startedAt: '2026-11-23T03:00:00.000Z' });
      await ctx.paid.charged('snap_1', 7);
      return units.map((u) => ({ id: u.id, params: {} }));
    };
    w.useSource(source);
    await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    const [run] = await readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    expect(run!.paidJobs).toEqual([
      { kind: 'filter', id: 'snap_1', started_at: '2026-11-23T03:00:00.000Z', recordsCharged: 7 },
    ]);
    expect(run).toMatchObject({
      paidCalls: 1,
      recordsCharged: 7,
      paid: [{ kind: 'filter', for: 'filter job', calls: 1, retried: 0, wasted: 0, records: 7, job: 'snap_1' }],
    });
  });
});
