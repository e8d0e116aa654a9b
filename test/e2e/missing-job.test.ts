/**
 * The `resume:` policy when an unfinished run's saved paid job cannot be reused. A run dies right after its filter
 * job's snapshot id is checkpointed (failpoint); then the service forgets that snapshot (a new emulator without the
 * first one's state, as when a real snapshot expires). The emulator's paid counters prove what each rerun paid for:
 * - `on_missing_job: fail` (the default): the rerun stops with the documented error and fix, paying nothing;
 * - `on_missing_job: restart`: the rerun starts a new run, logs the new paid job, pays for exactly one, loads all.
 * And `stale_after`: an unfinished run older than that is not resumed but started over, paying for a new job.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, failure, query, sluice, sluiceInProcess, snapshots, workspace, type Workspace } from './harness.js';

const RECORDS = 2500;

function pipelineText(name: string, resume: string): string {
  return `version: 1
name: ${name}
service:
  base_url: \${SLUICE_BASE_URL:?}
  api_key: \${SLUICE_API_KEY:?}
  retry: { retries: 1, base_delay_ms: 10 }
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>', value: 0 }
  records_limit: ${RECORDS}
  download: { format: jsonl, compress: true, batch_size: 1000 }
  poll: { interval_ms: 50 }
${resume}
sink: { type: jsonl, path: out/${name} }
`;
}

const emulators: EmulatorHandle[] = [];
afterEach(async () => {
  for (const e of emulators.splice(0)) await e.close();
});

async function started(): Promise<EmulatorHandle> {
  const e = await emulator({ seed: 5, size: 4000 });
  emulators.push(e);
  return e;
}

/** A rerun: in this process (sluiceInProcess), as it needs no process of its own. */
const run = (file: string, service: { url: string }) => sluiceInProcess(['run', file, '--no-progress'], { service });

/** A run that dies (SIGKILL) once its filter job's snapshot id is checkpointed; returns its run id and snapshot. */
async function diedAfterFilterJob(file: string, service: EmulatorHandle): Promise<{ runId: string; snap: string }> {
  // A child: the failpoint kills the process it is armed in.
  const r = await sluice(['run', file, '--no-progress'], {
    service,
    env: { SLUICE_FAILPOINTS: 'snapshot:job-checkpointed' },
  });
  expect(r.signal, r.stderr).toBe('SIGKILL');
  expect(service.stats.paid.filter).toBe(1);
  const runId = /starting \S+ \(run (\S+)\)/.exec(r.stderr)?.[1];
  const [snap] = await snapshots(service);
  expect(runId, r.stderr).toBeDefined();
  return { runId: runId!, snap: snap!.id as string };
}

async function jsonlRows(ws: Workspace, name: string): Promise<{ n: number; ids: number }> {
  const [row] = await query(
    `SELECT count(*) n, count(DISTINCT company_id) ids FROM read_json_auto('${path.join(ws.pipelines, 'out', name)}/**/*.jsonl*')`,
  );
  return row as { n: number; ids: number };
}

describe('resume.on_missing_job', () => {
  it('fail (default): says which job the service forgot and what to do, and pays nothing', async () => {
    const ws = workspace();
    const file = ws.write('missing_fail.yaml', pipelineText('missing_fail', ''));
    const { runId, snap } = await diedAfterFilterJob(file, await started());

    const forgetful = await started();
    const r = await run(file, forgetful);
    expect(r.code, r.stderr).toBe(1);
    const { error, fix } = failure(r);
    expect(error).toMatch(
      new RegExp(
        `^error: the service no longer knows snapshot ${snap} \\(started \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z by run ${runId}\\): GET /datasets/snapshots/${snap}: 404`,
      ),
    );
    expect(fix).toContain('--fresh');
    expect(fix).toContain('resume: { on_missing_job: restart }');
    expect(forgetful.stats.paid.filter ?? 0).toBe(0);

    // `plan` says the same, and what a run would pay for, without paying.
    const plan = await sluiceInProcess(['plan', file], { service: forgetful });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`the service no longer knows snapshot ${snap}`);
    expect(plan.stdout).toContain('POST /datasets/filter');
    expect(forgetful.stats.paid.filter ?? 0).toBe(0);
  });

  it('restart: starts a new run with one logged paid filter job, and loads every record', async () => {
    const ws = workspace();
    const file = ws.write(
      'missing_restart.yaml',
      pipelineText('missing_restart', 'resume: { on_missing_job: restart }'),
    );
    const { runId, snap } = await diedAfterFilterJob(file, await started());

    const forgetful = await started();
    const r = await run(file, forgetful);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`resuming missing_restart (run ${runId})`);
    expect(r.stderr).toMatch(
      new RegExp(
        `the service no longer knows snapshot ${snap} .*; resume.on_missing_job is restart: this new run \\(\\S+\\) starts a new paid filter job \\(records_limit ${RECORDS}\\)`,
      ),
    );
    expect(forgetful.stats.paid.filter).toBe(1);
    const [fresh] = await snapshots(forgetful);
    expect(fresh!.dataset_size).toBe(RECORDS);
    expect(await jsonlRows(ws, 'missing_restart')).toEqual({ n: RECORDS, ids: RECORDS });

    // The restart is kept in the new run's state for the run history.
    const state = JSON.parse(readFileSync(path.join(ws.pipelines, '.sluice/missing_restart/state.json'), 'utf8'));
    expect(state['run:restart']).toMatchObject({ reason: 'missing_job', from_run: runId, missing: `snapshot ${snap}` });
    // And the new job in its ledger of paid work, the only paid call of the new run.
    expect(state['run:paid'].lines).toEqual([expect.objectContaining({ kind: 'filter', calls: 1, job: fresh!.id })]);
  });
});

describe('resume.stale_after', () => {
  it('starts an unfinished run older than stale_after over, paying for a new job (logged)', async () => {
    const ws = workspace();
    const file = ws.write('stale.yaml', pipelineText('stale', 'resume: { stale_after: 20h }'));
    const service = await started();
    await diedAfterFilterJob(file, service);
    // The run started two days ago, as far as its id says (ids are sortable start times).
    const stateFile = path.join(ws.pipelines, '.sluice/stale/state.json');
    const state = JSON.parse(readFileSync(stateFile, 'utf8'));
    const oldRun = `${new Date(Date.now() - 48 * 3_600_000)
      .toISOString()
      .replace(/[-:.TZ]/g, '')
      .slice(0, 14)}-abcdef`;
    writeFileSync(stateFile, JSON.stringify({ ...state, 'run:id': oldRun }));

    const r = await run(file, service);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('resuming');
    expect(r.stderr).toContain(`run ${oldRun} started`);
    expect(r.stderr).toMatch(
      /longer ago than resume.stale_after \(20h\): not resumed: this new run .* starts a new paid filter job/,
    );
    expect(service.stats.paid.filter).toBe(2);
    expect(await jsonlRows(ws, 'stale')).toEqual({ n: RECORDS, ids: RECORDS });
  });
});
