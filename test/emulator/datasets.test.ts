/**
 * The datasets catalogue and the snapshot lifecycle over real HTTP: list, metadata, status transitions in emulated
 * time, no-match, the 5-minute cancel, and the 100-running-jobs limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { JOB_LISTINGS_ID } from '../../src/emulator/data/job-listings.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { COMPANIES, call, startJob, waitFinal, type Obj } from './datasets-harness.js';

const US = { name: 'country_code', operator: '=', value: 'US' };

describe('catalogue', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulator({ seed: 3, size: 1234 });
  });
  afterAll(() => emu.close());

  it('lists datasets with id, name and size (records per dataset), quirky names included', async () => {
    const res = await call(emu, 'GET', '/datasets/list');
    expect(res.status).toBe(200);
    const list = res.body as Obj[];
    expect(list.length).toBeGreaterThanOrEqual(3);
    for (const d of list) {
      expect(Object.keys(d)).toEqual(['id', 'name', 'size']);
      expect(d.id).toMatch(/^gd_[a-z0-9]+$/);
      expect(d.size).toBe(1234);
    }
    expect(list.map((d) => d.id)).toContain(COMPANIES);
    expect(new Set(list.map((d) => d.id)).size).toBe(list.length);
    // Like the real list: some names carry stray spaces, and a display name is not unique.
    expect(list.some((d) => d.name !== d.name.trim() || d.name.includes('  '))).toBe(true);
    expect(new Set(list.map((d) => d.name)).size).toBeLessThan(list.length);
  });

  it('describes every field of every dataset, and the fields are the record keys', async () => {
    const list = (await call(emu, 'GET', '/datasets/list')).body as Obj[];
    for (const d of list) {
      const res = await call(emu, 'GET', `/datasets/${d.id}/metadata`);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(d.id);
      for (const f of Object.values(res.body.fields as Obj)) {
        expect(Object.keys(f)).toEqual(['type', 'active', 'required', 'description']);
        expect(['text', 'url', 'number', 'date', 'boolean', 'array', 'object']).toContain(f.type);
      }
    }
    const meta = (await call(emu, 'GET', `/datasets/${COMPANIES}/metadata`)).body;
    expect(Object.keys(meta.fields)).toEqual(Object.keys(companyProfile(3, 0)));
    expect(meta.fields.followers).toMatchObject({ type: 'number', active: true });
    expect(meta.fields.employees.type).toBe('array');
    expect(meta.fields.funding.type).toBe('object');
    expect(meta.fields.id.required).toBe(true);
  });

  it('404 with the service wording for an unknown dataset', async () => {
    const res = await call(emu, 'GET', '/datasets/gd_unknown0000/metadata');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'dataset does not exist' });
  });

  it('404 plain text for an unknown snapshot', async () => {
    const res = await call(emu, 'GET', '/datasets/snapshots/snap_doesnotexist');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toBe('snapshot not found');
  });
});

describe('lifecycle in emulated time', () => {
  let emu: EmulatorHandle;
  const SIZE = 1000;
  beforeAll(async () => {
    // 60 emulated s scheduled, then 1000 records at 1000/min = 60 emulated s building: 0.6 real s each at ×100.
    emu = await startEmulator({
      seed: 4,
      size: SIZE,
      timeScale: 100,
      jobSchedulingMs: 60_000,
      jobRecordsPerMinute: 1000,
    });
  });
  afterAll(() => emu.close());

  it('goes scheduled → building → ready, then reports size, bytes and cost', async () => {
    const before = Date.now();
    const id = await startJob(emu, { dataset_id: COMPANIES, filter: US });
    const { meta, seen } = await waitFinal(emu, id, 20);
    expect(seen).toEqual(['scheduled', 'building', 'ready']);
    const expected = Array.from({ length: SIZE }, (_, i) => companyProfile(4, i)).filter(
      (r) => r.country_code === 'US',
    );
    const bytes = expected.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)) + 1, 0);
    expect(meta).toEqual({
      id,
      created: expect.any(String),
      status: 'ready',
      dataset_id: COMPANIES,
      customer_id: 'c_emulator',
      initiation_type: 'filter_api',
      dataset_size: expected.length,
      file_size: bytes,
      cost: Math.round(expected.length * 0.0025 * 100) / 100,
    });
    // `created` is emulated time, which starts at the real clock.
    expect(Date.parse(meta.created)).toBeGreaterThanOrEqual(before - 1000);
    const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
    expect(dl.bytes.length).toBe(meta.file_size);
  });

  it('lists snapshots, filtered by dataset and status', async () => {
    const res = await call(emu, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`);
    expect(res.status).toBe(200);
    expect((res.body as Obj[]).length).toBeGreaterThanOrEqual(1);
    for (const s of res.body as Obj[])
      expect(s).toMatchObject({ id: expect.stringMatching(/^snap_/), dataset_id: COMPANIES });
    const ready = (await call(emu, 'GET', '/datasets/snapshots?status=ready')).body as Obj[];
    expect(ready.every((s) => s.status === 'ready' && typeof s.dataset_size === 'number')).toBe(true);
  });
});

describe('the 5-minute limit', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    // 1000 records per emulated minute: 4,000 records take 4 min (fits), 10,000 would take 10 (cancelled).
    // ×600: the 5 emulated minutes pass in half a real second.
    emu = await startEmulator({ seed: 5, size: 10_000, timeScale: 600, jobRecordsPerMinute: 1000 });
  });
  afterAll(() => emu.close());

  it('cancels a job that would run past 5 minutes, at the 5-minute mark', async () => {
    const id = await startJob(emu, { dataset_id: COMPANIES, filter: { name: 'followers', operator: '>=', value: 0 } });
    const { meta, seen } = await waitFinal(emu, id, 20);
    expect(seen).toContain('building');
    expect(meta).toMatchObject({
      status: 'failed',
      error: 'Job was cancelled: it exceeded the 5-minute limit',
      error_code: 'job_timeout',
    });
    expect(meta.dataset_size).toBeUndefined();
    // Cancelled no earlier than 5 emulated minutes after it was created.
    expect(emu.ctx.clock.now() - Date.parse(meta.created)).toBeGreaterThanOrEqual(5 * 60_000);
    const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
    expect(dl.status).toBe(400);
    expect(dl.body.error).toMatch(/Job was cancelled: it exceeded the 5-minute limit \(job_timeout\)/);
  });

  it('finishes a job that fits, because records_limit stops the scan early', async () => {
    const id = await startJob(emu, {
      dataset_id: COMPANIES,
      records_limit: 3000,
      filter: { name: 'followers', operator: '>=', value: 0 },
    });
    const { meta } = await waitFinal(emu, id, 20);
    expect(meta).toMatchObject({ status: 'ready', dataset_size: 3000 });
  });
});

describe('jobs that stay scheduled', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    // Real time, and a minute of scheduling: jobs stay `scheduled` while the test runs.
    emu = await startEmulator({ seed: 6, size: 200, timeScale: 1, jobSchedulingMs: 60_000 });
  });
  afterAll(() => emu.close());

  it('answers the 101st with 429 and charges nothing for it; other datasets are not affected', async () => {
    const body = { dataset_id: COMPANIES, filter: US };
    const results = await Promise.all(
      Array.from({ length: 100 }, () => call(emu, 'POST', '/datasets/filter', { json: body })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.snapshot_id)).size).toBe(100);
    expect(emu.stats.paid.filter).toBe(100);
    const refused = await call(emu, 'POST', '/datasets/filter', { json: body });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Maximum limit of 100 jobs per dataset has been exceeded' });
    expect(emu.stats.paid.filter).toBe(100);
    const list = (await call(emu, 'GET', '/datasets/list')).body as Obj[];
    const other = list.find((d) => d.id !== COMPANIES)!.id as string;
    const elsewhere = await call(emu, 'POST', '/datasets/filter', {
      json: { dataset_id: other, filter: { name: 'url', operator: 'is_not_null' } },
    });
    expect(elsewhere.status).toBe(200);
  });

  it('answers 202 / not ready on download and parts while the job runs', async () => {
    // On another dataset: this one already runs 100 jobs.
    const id = await startJob(emu, {
      dataset_id: JOB_LISTINGS_ID,
      filter: { name: 'country_code', operator: '=', value: 'US' },
    });
    const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
    expect(dl.status).toBe(202);
    expect(dl.text).toBe('Snapshot is building. Try again in a few minutes');
    const parts = await call(emu, 'GET', `/datasets/snapshots/${id}/parts?batch_size=1000`);
    expect(parts.status).toBe(400);
    expect(parts.text).toBe('Snapshot is not ready');
  });
});
