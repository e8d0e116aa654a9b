/**
 * The emulator's state file, over real HTTP on 127.0.0.1: deep-lookup previews, requests and enrichments, and zones
 * are known to the next emulator started with the same file; paid counters carry over; an unusable file stops the
 * start, untouched. (Filter jobs across a restart: persistence-filter-jobs.test.ts.)
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { EmulatorStateError, startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { COMPANIES, call, startJob, waitFinal, type Obj } from './datasets-harness.js';
import {
  DL,
  FILTER,
  HOUR,
  OPTIONS,
  QUERY,
  advance,
  dl,
  emulator,
  keep,
  stateFile,
  stats,
  useStateDir,
} from './persistence-harness.js';

useStateDir();

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
