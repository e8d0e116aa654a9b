/**
 * One run per pipeline at a time (issue 11), with the real CLI: a second `sluice run` of a pipeline that is
 * running, or a run of another pipeline writing to one of its outputs, exits at once with the lock's exit code (3)
 * naming the holder, and the first run completes untouched; a
 * holder killed with -9 leaves its lock behind, which the next run takes over (saying so) before resuming; `--wait`
 * waits for the holder instead of failing.
 *
 * The first run is held mid-run deterministically rather than slowed down: a recording proxy in front of the
 * emulator keeps its request for one SERP page unanswered until the test lets it through. That first run is a
 * process of its own (it holds the locks, is killed or interrupted); the runs that meet it run the CLI in this
 * process (sluiceInProcess), a process other than the holder all the same.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  emulatorBehindProxy,
  failure,
  holdPage,
  lineSeen,
  query,
  runInProcess,
  runOkInProcess,
  serpCrawl,
  sluice,
  sluiceInProcess,
  workspace,
  type InProcessRun,
  type Workspace,
} from './harness.js';

const served = emulatorBehindProxy({ seed: 17 });

type SinkKind = 'jsonl' | 'parquet' | 'duckdb';

const sinkLine: Record<SinkKind, (name: string) => string> = {
  jsonl: (name) => `{ type: jsonl, path: out/${name}_jsonl }`,
  parquet: (name) => `{ type: parquet, path: out/${name}_parquet }`,
  duckdb: (name) => `{ type: duckdb, path: out/${name}.duckdb, table: serp_organic, write: append }`,
};

/** The held SERP crawl into `sinks`, whose outputs are named after `outputsOf` (another pipeline's, to share them). */
function pipelineText(name: string, sinks: SinkKind[], outputsOf = name): string {
  // A held read is abandoned when the interrupt's grace is spent: a short one (8 s: the CLI exits at its end, and the abandoned run still writes its history in the last 1.6 s).
  return `${serpCrawl(
    name,
    sinks.map((s) => sinkLine[s](outputsOf)),
  )}limits: { interrupt_grace_s: 8 }\n`;
}

/** The results a sink holds (query and link), sorted: what "the same rows" is checked on. */
async function ids(dir: string, name: string, kind: SinkKind): Promise<string[]> {
  const from: Record<SinkKind, string> = {
    jsonl: `read_json('${dir}/out/${name}_jsonl/*.jsonl')`,
    parquet: `read_parquet('${dir}/out/${name}_parquet/**/*.parquet')`,
    duckdb: 'w.serp_organic',
  };
  const rows = await query(`SELECT query || ' ' || link id FROM ${from[kind]} ORDER BY 1`, {
    ...(kind === 'duckdb' && { duckdb: path.join(dir, `out/${name}.duckdb`) }),
  });
  return rows.map((r) => r.id as string);
}

let clean: Workspace;
beforeAll(async () => {
  // What each sink holds after a run no one disturbed: the contested runs must end with the same rows.
  clean = workspace();
  // In this process: the CLI is not what this run is about.
  await runInProcess(clean.write('clean.yaml', pipelineText('clean', ['jsonl', 'parquet', 'duckdb'])), served.proxy);
});

describe('runs that meet', () => {
  it('a second run of the pipeline, and runs of other pipelines writing to its JSONL, Parquet or DuckDB output, exit with the lock code naming the holder; the first completes untouched', async () => {
    const ws = workspace();
    const name = 'locked';
    const file = ws.write(`${name}.yaml`, pipelineText(name, ['jsonl', 'parquet', 'duckdb']));
    // Other pipelines (their own state) sharing one of its outputs each.
    const sharing = (kind: SinkKind): string =>
      ws.write(`shares_${kind}.yaml`, pipelineText(`shares_${kind}`, [kind], name));
    const gate = holdPage(served.proxy);
    const first = sluice(['run', file, '--no-progress'], { service: served.proxy });
    await gate.reached;

    const run = (f: string): InProcessRun => sluiceInProcess(['run', f, '--no-progress'], { service: served.proxy });
    const [again, jsonl, parquet, duckdb] = await Promise.all([
      run(file),
      run(sharing('jsonl')),
      run(sharing('parquet')),
      run(sharing('duckdb')),
    ]);
    // They gave up while the first was still held mid-run: none waited for it.
    expect(first.child.exitCode).toBeNull();
    const holder = `locked by pid ${first.child.pid}`;
    for (const r of [again, jsonl, parquet, duckdb]) {
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).not.toMatch(/resuming/);
    }
    expect(failure(again).error).toContain(`${name}/run.lock is ${holder} on `);
    expect(failure(again).fix).toContain('--wait');
    expect(again.stderr).not.toMatch(/starting/);
    expect(failure(jsonl).error).toContain(`${name}_jsonl/.sluice-lock is ${holder} on `);
    expect(failure(parquet).error).toContain(`${name}_parquet/.sluice-lock is ${holder} on `);
    // DuckDB's own lock on the file: told apart from a permission problem, with the holder's pid.
    expect(failure(duckdb).error).toContain(`${name}.duckdb is locked by another process (pid ${first.child.pid}`);

    gate.release();
    const r1 = await first;
    expect(r1.code, r1.stderr).toBe(0);
    for (const kind of ['jsonl', 'parquet', 'duckdb'] as const)
      expect(await ids(ws.pipelines, name, kind), kind).toEqual(await ids(clean.pipelines, 'clean', kind));
  });
});

describe('a lock whose holder was killed with -9', () => {
  it('is taken over by the next run, which says so and resumes', async () => {
    const ws = workspace();
    const name = 'lock_killed';
    const file = ws.write(`${name}.yaml`, pipelineText(name, ['jsonl', 'duckdb']));
    const gate = holdPage(served.proxy);
    const first = sluice(['run', file, '--no-progress'], { service: served.proxy });
    await gate.reached;
    first.child.kill('SIGKILL');
    const r1 = await first;
    gate.drop();
    expect(r1.signal).toBe('SIGKILL');

    const r2 = await runOkInProcess(file, served.proxy);
    expect(r2.stderr).toContain(`run.lock: its holder (pid ${first.child.pid}`);
    expect(r2.stderr).toContain(`${name}_jsonl/.sluice-lock: its holder (pid ${first.child.pid}`);
    expect(r2.stderr).toMatch(/resuming lock_killed/);
    for (const kind of ['jsonl', 'duckdb'] as const)
      expect(await ids(ws.pipelines, name, kind)).toEqual(await ids(clean.pipelines, 'clean', kind));
  });
});

describe('--wait', () => {
  // Needs the CLI's `--wait[=timeout]` flag on `sluice run`, passed to the engine as `RunOptions.waitForLockMs`.
  it('waits for the holder to finish, then runs', async () => {
    const ws = workspace();
    const name = 'lock_wait';
    const file = ws.write(`${name}.yaml`, pipelineText(name, ['jsonl']));
    const gate = holdPage(served.proxy);
    const first = sluice(['run', file, '--no-progress'], { service: served.proxy });
    await gate.reached;

    const second = sluiceInProcess(['run', file, '--no-progress', '--wait=1m'], { service: served.proxy });
    await lineSeen(second, /waiting for the lock .*run\.lock/);
    expect(second.ended).toBe(false);
    gate.release();
    const [r1, r2] = await Promise.all([first, second]);
    expect(r1.code, r1.stderr).toBe(0);
    expect(r2.code, r2.stderr).toBe(0);
    // The first run completed, so the second is tonight's next run: a new run that reads every page again.
    expect(r2.stderr).toMatch(/starting lock_wait/);
    const expected = await ids(clean.pipelines, 'clean', 'jsonl');
    expect(await ids(ws.pipelines, name, 'jsonl')).toEqual([...expected, ...expected].sort());
  });
});

describe('an interrupt', () => {
  it('SIGINT: the read in flight is abandoned, the locks released, exit 130 with how far it got; the rerun resumes', async () => {
    const ws = workspace();
    const name = 'interrupted';
    const file = ws.write(`${name}.yaml`, pipelineText(name, ['jsonl', 'duckdb']));
    const gate = holdPage(served.proxy);
    const first = sluice(['run', file, '--no-progress'], { service: served.proxy });
    await gate.reached;
    first.child.kill('SIGINT');
    const r1 = await first;
    gate.drop();
    expect(r1.code, r1.stderr).toBe(130);
    expect(r1.stderr).toContain('unit serp:www.google.com:coffee%20roasters%20portland:start:10 abandoned');
    // The CLI ends an interrupted run with this line on stderr (not as an error with a fix).
    expect(r1.stderr.trimEnd().split('\n').at(-1)).toMatch(/interrupted: \d+\/3 units committed; run again to resume$/);
    expect(existsSync(path.join(ws.pipelines, '.sluice', name, 'run.lock'))).toBe(false);
    expect(existsSync(path.join(ws.pipelines, 'out', `${name}_jsonl`, '.sluice-lock'))).toBe(false);

    const r2 = await runOkInProcess(file, served.proxy);
    expect(r2.stderr).toMatch(/resuming interrupted/);
    expect(r2.stderr).not.toMatch(/taking over the lock/);
    for (const kind of ['jsonl', 'duckdb'] as const)
      expect(await ids(ws.pipelines, name, kind)).toEqual(await ids(clean.pipelines, 'clean', kind));
  });
});
