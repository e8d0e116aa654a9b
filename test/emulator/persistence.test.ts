/**
 * The emulator's state file, over real HTTP on 127.0.0.1: what a client received an id for (filter jobs, deep-lookup
 * previews, requests and enrichments, zones) is known to the next emulator started with the same file — after a
 * clean close, after a kill -9 of the process, and from the bytes on disk the instant the id was answered — and
 * keeps its timeline and its records; paid counters carry over; an unusable file stops the start, untouched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmulatorStateError, startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { readPaidCounters } from '../../src/emulator/state-file.js';
import type { EmulatorOptions } from '../../src/emulator/context.js';
import { COMPANIES, call, filterForm, parseJsonRecords, startJob, waitFinal, type Obj } from './datasets-harness.js';

const OPTIONS: Partial<EmulatorOptions> = {
  seed: 3,
  size: 600,
  // A filter job stays `scheduled` for an emulated minute, so a job is certainly unfinished when the emulator
  // stops; tests then move the restarted emulator's clock past it.
  jobSchedulingMs: 60_000,
};
const FILTER = { name: 'followers', operator: '>=', value: 100 };
const DL = '/datasets/deep_lookup/v1';
/** Seed 3: more matches than any result_limit below. */
const QUERY = 'Find all robotics companies in Europe';
const HOUR = 3_600_000;

let dir: string;
let stateFile: string;
const started: EmulatorHandle[] = [];
const children: ChildProcess[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sluice-emu-state-'));
  stateFile = path.join(dir, 'nested', 'emulator.json');
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(started.splice(0).map((e) => e.close().catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

async function emulator(opts: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  const e = await startEmulator({ ...OPTIONS, ...opts });
  started.push(e);
  return e;
}

/** Moves the emulator's clock forward (routes read `ctx.clock.now()` on every call). */
function advance(emu: EmulatorHandle, ms: number): void {
  const clock = emu.ctx.clock as { now: () => number };
  const before = clock.now.bind(clock);
  clock.now = () => before() + ms;
}

async function stats(emu: EmulatorHandle): Promise<Obj> {
  return (await (await fetch(`${emu.url}/_emulator/stats`)).json()) as Obj;
}

async function snapshotRecords(emu: EmulatorHandle, id: string): Promise<Obj[]> {
  const { meta } = await waitFinal(emu, id);
  expect(meta.status).toBe('ready');
  const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
  expect(dl.status).toBe(200);
  return parseJsonRecords(dl.bytes);
}

/** The records of the same job on an emulator that never stopped. */
async function referenceRecords(request: Obj): Promise<{ id: string; records: Obj[] }> {
  const ref = await emulator();
  const id = await startJob(ref, request);
  advance(ref, HOUR);
  return { id, records: await snapshotRecords(ref, id) };
}

async function dl(
  emu: EmulatorHandle,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: Obj }> {
  const res = await call(emu, method, `${DL}${p}`, body === undefined ? {} : { json: body });
  return { status: res.status, body: res.body as Obj };
}

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

describe("the account's bill across a restart", () => {
  it('paid operations, records charged and crawl requests go on from where they were (GET /_emulator/counters)', async () => {
    const counters = async (emu: EmulatorHandle): Promise<Obj> =>
      (await (await fetch(`${emu.url}/_emulator/counters`)).json()) as Obj;
    const page = (emu: EmulatorHandle, q: string): Promise<Response> =>
      fetch(`${emu.url}/request`, {
        method: 'POST',
        headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
        body: JSON.stringify({
          zone: 'serp_zone',
          url: `https://www.google.com/search?q=${q}&brd_json=1`,
          format: 'json',
        }),
      });
    const a = await emulator({ stateFile });
    const id = await startJob(a, { dataset_id: COMPANIES, filter: FILTER, records_limit: 7 });
    advance(a, HOUR);
    expect((await waitFinal(a, id)).meta.status).toBe('ready');
    for (const q of ['one', 'two']) expect((await page(a, q)).status).toBe(200);
    const bill = { paid: { filter: 1 }, requests: 2, paid_calls: 3, records_charged: 7 };
    expect(await counters(a)).toEqual(bill);
    await a.close();

    const b = await emulator({ stateFile });
    expect(await counters(b)).toEqual(bill);
    expect((await page(b, 'three')).status).toBe(200);
    await b.close();
    const c = await emulator({ stateFile });
    expect(await counters(c)).toEqual({ ...bill, requests: 3, paid_calls: 4 });
  });
});

describe('deep lookup across a restart', () => {
  it('a preview, a request and its enrichment survive restarts, and download what an emulator that never stopped does', async () => {
    const run = async (restart: (emu: EmulatorHandle) => Promise<EmulatorHandle>): Promise<Obj[]> => {
      let emu = await emulator({ stateFile: restart === keep ? undefined : stateFile });
      const preview = await dl(emu, 'POST', '/preview', [{ query: QUERY }]);
      expect(preview.status).toBe(200);
      emu = await restart(emu);
      const trigger = await dl(emu, 'POST', '/trigger', [{ preview_id: preview.body.preview_id, result_limit: 6 }]);
      expect(trigger.status).toBe(200);
      const id = trigger.body.request_id as string;
      emu = await restart(emu);
      expect((await dl(emu, 'GET', `/request/${id}/status`)).body.status).not.toBe('completed');
      advance(emu, 24 * HOUR);
      expect((await dl(emu, 'GET', `/request/${id}/status`)).body.status).toBe('completed');
      const enrich = await dl(emu, 'POST', `/request/${id}/enrich`, [
        { column_name: 'ceo_name', query: 'Name of the CEO' },
      ]);
      expect(enrich.status).toBe(200);
      emu = await restart(emu);
      advance(emu, 48 * HOUR);
      const got = await dl(emu, 'GET', `/request/${id}`);
      expect(got.body.data.some((row: Obj) => typeof row.ceo_name === 'string')).toBe(true);
      expect((await stats(emu)).paid).toEqual({ trigger: 1, enrich: 1 });
      const download = await call(emu, 'GET', `${DL}/request/${id}/download?format=json`);
      expect(download.status, download.text).toBe(200);
      return download.body as Obj[];
    };
    const restarted = await run(async (emu) => {
      await emu.close();
      return emulator({ stateFile });
    });
    const reference = await run(keep);
    expect(restarted).toHaveLength(6);
    expect(restarted.every((row) => typeof row.ceo_name === 'string')).toBe(true);
    expect(restarted).toEqual(reference);
  });

  it('a cancelled request stays cancelled with the records collected before', async () => {
    const a = await emulator({ stateFile });
    const id = (await dl(a, 'POST', '/trigger', [{ query: QUERY, result_limit: 50 }])).body.request_id as string;
    advance(a, 13_000); // into `generating`
    const cancelled = await dl(a, 'POST', `/request/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    await a.close();
    const b = await emulator({ stateFile });
    advance(b, 24 * HOUR);
    const got = await dl(b, 'GET', `/request/${id}`);
    expect(got.body.status).toBe('cancelled');
    expect(got.body.matched_records).toBe(cancelled.body.matched_records);
  });
});

async function keep(emu: EmulatorHandle): Promise<EmulatorHandle> {
  return emu;
}

describe('zones across a restart', () => {
  it('a created zone and a changed built-in zone are as they were', async () => {
    const a = await emulator({ stateFile });
    const created = await call(a, 'POST', '/zone', {
      json: { zone: { name: 'my_serp', type: 'serp' }, plan: { type: 'serp' } },
    });
    expect(created.status).toBe(201);
    const refreshed = await call(a, 'POST', '/zone/ips/refresh', { json: { zone: 'static_zone' } });
    expect(refreshed.status).toBe(200);
    await a.close();

    const b = await emulator({ stateFile });
    const zones = (await call(b, 'GET', '/zone/get_active_zones')).body as Obj[];
    expect(zones.map((z) => z.name)).toContain('my_serp');
    const again = await call(b, 'POST', '/zone', {
      json: { zone: { name: 'my_serp', type: 'serp' }, plan: { type: 'serp' } },
    });
    expect(again.status).toBe(409);
    // Refreshing the IPs the first emulator handed out: the second knows them as the zone's.
    const next = await call(b, 'POST', '/zone/ips/refresh', {
      json: { zone: 'static_zone', ips: refreshed.body.new_ips },
    });
    expect(next.status, next.text).toBe(200);
  });
});

describe('the state file itself', () => {
  it('a missing file is an empty start, and nothing is written until a client gets an id', async () => {
    const a = await emulator({ stateFile });
    expect((await call(a, 'GET', '/datasets/snapshots/snap_unknown')).status).toBe(404);
    await a.close();
    await expect(stat(stateFile)).rejects.toMatchObject({ code: 'ENOENT' });

    const b = await emulator({ stateFile });
    await startJob(b, { dataset_id: COMPANIES, filter: FILTER });
    expect(JSON.parse(await readFile(stateFile, 'utf8'))).toMatchObject({ format: 'sluice-emulator-state' });
  });

  it.each([
    ['not JSON', (_: string) => '{"format": "sluice-emulator-state", "vers', /is unusable: it is not valid JSON/],
    ['another program’s JSON', (_: string) => '{"hello": "world"}', /is unusable: it is not an emulator state file/],
    [
      'a section changed by hand',
      (text: string) => {
        const doc = JSON.parse(text) as Obj;
        doc.sections.snapshots.jobs[0].created_at = 'yesterday';
        return JSON.stringify(doc);
      },
      /is unusable: "snapshots\.jobs\.0\.created_at"/,
    ],
  ])('%s: the start fails naming the file, which is left untouched', async (_name, corrupt, message) => {
    const a = await emulator({ stateFile });
    await startJob(a, { dataset_id: COMPANIES, filter: FILTER });
    await a.close();
    const bad = corrupt(await readFile(stateFile, 'utf8'));
    await writeFile(stateFile, bad);

    const start = startEmulator({ ...OPTIONS, stateFile });
    await expect(start).rejects.toBeInstanceOf(EmulatorStateError);
    await expect(start).rejects.toThrow(message);
    await expect(start).rejects.toThrow(stateFile);
    expect(await readFile(stateFile, 'utf8')).toBe(bad);
  });

  it('a file written with another seed or size is refused, saying which', async () => {
    const a = await emulator({ stateFile });
    await startJob(a, { dataset_id: COMPANIES, filter: FILTER });
    await a.close();
    const before = await readFile(stateFile, 'utf8');

    await expect(startEmulator({ ...OPTIONS, seed: 4, stateFile })).rejects.toThrow(
      /written by an emulator with seed 3; this one has seed 4/,
    );
    await expect(startEmulator({ ...OPTIONS, size: 700, stateFile })).rejects.toThrow(
      /size 600; this one has size 700/,
    );
    expect(await readFile(stateFile, 'utf8')).toBe(before);
  });
});

function repoRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
}

function serverModule(): string {
  return path.join(repoRoot(), 'src/emulator/server.ts');
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      lines.close();
      resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`the emulator process exited (${code}) before listening`)));
  });
}
