/**
 * The emulator's state file, over real HTTP on 127.0.0.1: a filter job a client received an id for is known to the
 * next emulator started with the same file — after a clean close, after a kill -9 of the process, and from the
 * bytes on disk the instant the id was answered — and keeps its timeline and its records.
 */
import { spawn } from 'node:child_process';
import { copyFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readPaidCounters } from '../../src/emulator/state-file.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { COMPANIES, call, filterForm, startJob, type Obj } from './datasets-harness.js';
import {
  FILTER,
  HOUR,
  OPTIONS,
  advance,
  children,
  dir,
  emulator,
  firstLine,
  referenceRecords,
  repoRoot,
  serverModule,
  snapshotRecords,
  stateFile,
  stats,
  useStateDir,
} from './persistence-harness.js';

useStateDir();

describe('filter jobs across a restart', () => {
  it('a job unfinished at a clean close is known to the next emulator, becomes ready, and downloads the same records', async () => {
    const a = await emulator({ stateFile });
    const id = await startJob(a, { dataset_id: COMPANIES, filter: FILTER });
    const before = (await call(a, 'GET', `/datasets/snapshots/${id}`)).body as Obj;
    expect(before.status).toBe('scheduled');
    await a.close();

    expect(a.resumed).toBe(false);
    const b = await emulator({ stateFile });
    expect(b.resumed).toBe(true);
    const after = await call(b, 'GET', `/datasets/snapshots/${id}`);
    expect(after.status, after.text).toBe(200);
    expect(after.body.created).toBe(before.created);
    expect(['scheduled', 'building']).toContain(after.body.status);
    // Not ready, in the form of its state: 400 while scheduled, 202 while building.
    expect([400, 202]).toContain((await call(b, 'GET', `/datasets/snapshots/${id}/download`)).status);
    advance(b, HOUR);
    const records = await snapshotRecords(b, id);

    const reference = await referenceRecords({ dataset_id: COMPANIES, filter: FILTER });
    expect(reference.id).toBe(id);
    expect(records.length).toBeGreaterThan(0);
    expect(records).toEqual(reference.records);
  });

  it('restarted with a faster clock, emulated time goes on from where it was and the job finishes', async () => {
    const a = await emulator({ stateFile });
    const id = await startJob(a, { dataset_id: COMPANIES, filter: FILTER });
    const created = Date.parse((await call(a, 'GET', `/datasets/snapshots/${id}`)).body.created as string);
    await a.close();

    const b = await emulator({ stateFile, timeScale: 1_000 });
    expect(b.ctx.clock.now()).toBeGreaterThanOrEqual(created);
    const reference = await referenceRecords({ dataset_id: COMPANIES, filter: FILTER });
    expect(await snapshotRecords(b, id)).toEqual(reference.records);
  });

  it('a multipart job with an uploaded file and records_limit is rebuilt the same', async () => {
    const filter = { name: 'country_code', operator: 'in', value: 'c.csv' };
    const file = [{ name: 'c.csv', content: 'country_code\nGB\nUS\n' }];
    const submit = async (emu: EmulatorHandle): Promise<string> => {
      const res = await call(emu, 'POST', `/datasets/filter?dataset_id=${COMPANIES}&records_limit=9`, {
        form: filterForm(filter, file),
      });
      expect(res.status, res.text).toBe(200);
      return res.body.snapshot_id as string;
    };
    const a = await emulator({ stateFile });
    const id = await submit(a);
    await a.close();
    const b = await emulator({ stateFile });
    advance(b, HOUR);
    const records = await snapshotRecords(b, id);

    const ref = await emulator();
    const refId = await submit(ref);
    advance(ref, HOUR);
    expect(records).toHaveLength(9);
    expect(records).toEqual(await snapshotRecords(ref, refId));
  });

  it('the state on disk when the id was answered is enough (the emulator is never closed)', async () => {
    const a = await emulator({ stateFile });
    const id = await startJob(a, { dataset_id: COMPANIES, filter: FILTER });
    // What a kill at this instant leaves: the file as it is now, with no close and no flush.
    const atKill = path.join(dir, 'at-kill.json');
    await copyFile(stateFile, atKill);

    const b = await emulator({ stateFile: atKill });
    expect((await call(b, 'GET', `/datasets/snapshots/${id}`)).status).toBe(200);
    advance(b, HOUR);
    const reference = await referenceRecords({ dataset_id: COMPANIES, filter: FILTER });
    expect(await snapshotRecords(b, id)).toEqual(reference.records);
  });

  it('after a kill -9 of the emulator process, the next one knows the job', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { startEmulator } = await import(${JSON.stringify(serverModule())});
         const e = await startEmulator(${JSON.stringify({ ...OPTIONS, stateFile })});
         console.log(e.url);`,
      ],
      { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(child);
    const url = await firstLine(child);
    const res = await fetch(`${url}/datasets/filter`, {
      method: 'POST',
      headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
      body: JSON.stringify({ dataset_id: COMPANIES, filter: FILTER }),
    });
    expect(res.status).toBe(200);
    const id = ((await res.json()) as Obj).snapshot_id as string;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // What a test of a spawned CLI reads once its embedded emulator is gone.
    expect(await readPaidCounters(stateFile)).toEqual({ filter: 1 });

    const b = await emulator({ stateFile });
    expect((await call(b, 'GET', `/datasets/snapshots/${id}`)).status).toBe(200);
    expect((await stats(b)).paid).toEqual({ filter: 1 });
    advance(b, HOUR);
    const reference = await referenceRecords({ dataset_id: COMPANIES, filter: FILTER });
    expect(await snapshotRecords(b, id)).toEqual(reference.records);
  });

  it('new jobs after a restart get new ids, and the paid counters count both instances', async () => {
    const a = await emulator({ stateFile });
    const first = await startJob(a, { dataset_id: COMPANIES, filter: FILTER });
    expect((await stats(a)).paid).toEqual({ filter: 1 });
    await a.close();

    const b = await emulator({ stateFile });
    expect((await stats(b)).paid).toEqual({ filter: 1 });
    const second = await startJob(b, { dataset_id: COMPANIES, filter: FILTER });
    expect(second).not.toBe(first);
    expect((await stats(b)).paid).toEqual({ filter: 2 });
    const listed = (await call(b, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`)).body as Obj[];
    expect(listed.map((s) => s.id).sort()).toEqual([first, second].sort());

    // A reset of the counters is the account's too.
    await fetch(`${b.url}/_emulator/stats`, { method: 'DELETE' });
    await b.close();
    const c = await emulator({ stateFile });
    expect((await stats(c)).paid).toEqual({});
  });
});
