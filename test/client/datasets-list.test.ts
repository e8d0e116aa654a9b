/**
 * `client.datasets.snapshots(datasetId)`: the free snapshot list a lost filter answer is reconciled with. Against
 * the emulator (real HTTP) for the shape and the service clock, and against a bare local server for answers the
 * emulator never gives (no Date header, not an array).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError, createClient, type ServiceClient } from '../../src/client/index.js';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/company-profiles.js';
import { JOB_LISTINGS_ID } from '../../src/emulator/data/job-listings.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const OTHER_DATASET = JOB_LISTINGS_ID;
const FILTER = { name: 'followers', operator: '>', value: 0 };

let emu: EmulatorHandle;
let client: ServiceClient;
beforeAll(async () => {
  // Emulated time runs 1000× faster, so the service clock is far from the local one: the test can tell them apart.
  emu = await startEmulator({ seed: 5, size: 200, timeScale: 1000 });
  client = createClient({ baseUrl: emu.url, apiKey: 'emulator-key', retry: { retries: 0 } });
});
afterAll(async () => {
  await client.close();
  await emu.close();
});

describe('snapshot list', () => {
  it("lists the dataset's snapshots only, with id, created and status, newest included at once", async () => {
    const before = await client.datasets.snapshots(COMPANY_PROFILES_ID);
    const { snapshot_id } = await client.datasets.filter({ dataset_id: COMPANY_PROFILES_ID, filter: FILTER });
    const other = await client.datasets.filter({
      dataset_id: OTHER_DATASET,
      filter: { name: 'job_posting_id', operator: 'is_not_null' },
    });
    const after = await client.datasets.snapshots(COMPANY_PROFILES_ID);

    expect(after.snapshots.map((s) => s.id)).toEqual([...before.snapshots.map((s) => s.id), snapshot_id]);
    expect(after.snapshots.map((s) => s.id)).not.toContain(other.snapshot_id);
    const mine = after.snapshots.find((s) => s.id === snapshot_id)!;
    expect(mine.dataset_id).toBe(COMPANY_PROFILES_ID);
    expect(['scheduled', 'building', 'ready']).toContain(mine.status);
    expect(Number.isNaN(Date.parse(mine.created!))).toBe(false);
  });

  it("reports the service's clock (its Date header), on which `created` is measured", async () => {
    const { snapshot_id } = await client.datasets.filter({ dataset_id: COMPANY_PROFILES_ID, filter: FILTER });
    const { snapshots, serviceTime } = await client.datasets.snapshots(COMPANY_PROFILES_ID);
    const created = Date.parse(snapshots.find((s) => s.id === snapshot_id)!.created!);
    expect(serviceTime).toBeInstanceOf(Date);
    // The emulated clock ran ahead of the local one; Date is whole seconds, so it may read up to 1 s early.
    expect(serviceTime!.getTime()).toBeGreaterThan(Date.now() + 5_000);
    expect(serviceTime!.getTime()).toBeGreaterThanOrEqual(created - 1000);
  });
});

describe('answers the emulator never gives', () => {
  let server: Server;
  let answer: { body: string; date?: string } = { body: '[]' };
  let local: ServiceClient;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      if (answer.date === undefined) res.sendDate = false;
      else res.setHeader('date', answer.date);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    local = createClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
      retry: { retries: 0 },
    });
  });
  afterAll(async () => {
    await local.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('no Date header: serviceTime is undefined, the list is still read', async () => {
    answer = { body: JSON.stringify([{ id: 'snap_a', created: '2026-01-01T00:00:00Z', status: 'ready' }]) };
    const r = await local.datasets.snapshots(COMPANY_PROFILES_ID);
    expect(r.serviceTime).toBeUndefined();
    expect(r.snapshots).toEqual([{ id: 'snap_a', created: '2026-01-01T00:00:00Z', status: 'ready' }]);
  });

  it('entries of another dataset are dropped even when the service ignores the query', async () => {
    answer = {
      body: JSON.stringify([
        { id: 'snap_a', dataset_id: COMPANY_PROFILES_ID },
        { id: 'snap_b', dataset_id: OTHER_DATASET },
      ]),
      date: 'Wed, 07 Jan 2026 10:00:00 GMT',
    };
    const r = await local.datasets.snapshots(COMPANY_PROFILES_ID);
    expect(r.snapshots.map((s) => s.id)).toEqual(['snap_a']);
    expect(r.serviceTime?.toISOString()).toBe('2026-01-07T10:00:00.000Z');
  });

  it('an answer that is not an array of snapshots is a ServiceError quoting it', async () => {
    answer = { body: '{"error":"nope"}', date: 'Wed, 07 Jan 2026 10:00:00 GMT' };
    const err = await local.datasets.snapshots(COMPANY_PROFILES_ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).message).toMatch(/expected an array of snapshots, got: \{"error":"nope"\}/);
  });
});
