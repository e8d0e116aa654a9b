/**
 * The datasets catalogue and the snapshot lifecycle over real HTTP: list, metadata (for a minority of datasets, as
 * the live service), status transitions in emulated time, both forms of "not ready", expiry 30 days after the job
 * finished, the 5-minute cancel, and the 100-running-jobs limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { JOB_LISTINGS_ID } from '../../src/emulator/data/job-listings.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { COMPANIES, call, startJob, waitFinal, type Answer, type Obj } from './datasets-harness.js';

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

  it('describes a minority of datasets (the company profiles); the others exist and answer 404 as an unknown one', async () => {
    const list = (await call(emu, 'GET', '/datasets/list')).body as Obj[];
    const answers = await Promise.all(list.map((d) => call(emu, 'GET', `/datasets/${d.id}/metadata`)));
    const described = list.filter((_, i) => answers[i]!.status === 200).map((d) => d.id);
    expect(described).toEqual([COMPANIES]);
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(404);
      expect(a.body).toEqual({ error: 'dataset does not exist' });
    }
    const meta = (await call(emu, 'GET', `/datasets/${COMPANIES}/metadata`)).body;
    expect(Object.keys(meta.fields)).toEqual(Object.keys(companyProfile(3, 0)));
    expect(meta.fields.followers).toMatchObject({ type: 'number', active: true });
    expect(meta.fields.employees.type).toBe('array');
    expect(meta.fields.funding.type).toBe('object');
    expect(meta.fields.id.required).toBe(true);
  });

  it('under metadata: all, describes every field of every dataset, and the fields are the record keys', async () => {
    const all = await startEmulator({ seed: 3, size: 10, datasets: { metadata: 'all' } });
    try {
      const list = (await call(all, 'GET', '/datasets/list')).body as Obj[];
      for (const d of list) {
        const res = await call(all, 'GET', `/datasets/${d.id}/metadata`);
        expect(res.status).toBe(200);
        expect(res.body.id).toBe(d.id);
        for (const f of Object.values(res.body.fields as Obj)) {
          expect(Object.keys(f)).toEqual(['type', 'active', 'required', 'description']);
          expect(['text', 'url', 'number', 'date', 'boolean', 'array', 'object']).toContain(f.type);
        }
      }
    } finally {
      await all.close();
    }
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

  it('cancels a job that would run past 5 minutes, at the 5-minute mark: status canceled, the reason in failure_reason', async () => {
    const id = await startJob(emu, { dataset_id: COMPANIES, filter: { name: 'followers', operator: '>=', value: 0 } });
    const { meta, seen } = await waitFinal(emu, id, 20);
    expect(seen).toContain('building');
    expect(meta).toMatchObject({
      status: 'canceled',
      failure_reason: 'Job was cancelled: it exceeded the 5-minute limit',
    });
    expect(meta.dataset_size).toBeUndefined();
    // Cancelled no earlier than 5 emulated minutes after it was created.
    expect(emu.ctx.clock.now() - Date.parse(meta.created)).toBeGreaterThanOrEqual(5 * 60_000);
    const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
    expect(dl.status).toBe(400);
    expect(dl.body.error).toMatch(/Job was cancelled: it exceeded the 5-minute limit/);
    const listed = (await call(emu, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`)).body as Obj[];
    expect(listed.find((s) => s.id === id)?.status).toBe('canceled');
  });

  it('under timeoutStatus: failed, such a job ends failed with error_code job_timeout', async () => {
    // 100 records per emulated minute: 1,000 records cannot be scanned inside the limit.
    const failed = await startEmulator({
      seed: 5,
      size: 1000,
      timeScale: 600,
      jobRecordsPerMinute: 100,
      datasets: { timeoutStatus: 'failed' },
    });
    try {
      const id = await startJob(failed, {
        dataset_id: COMPANIES,
        filter: { name: 'followers', operator: '>=', value: 0 },
      });
      expect((await waitFinal(failed, id, 20)).meta).toMatchObject({
        status: 'failed',
        error: 'Job was cancelled: it exceeded the 5-minute limit',
        error_code: 'job_timeout',
      });
    } finally {
      await failed.close();
    }
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

  it('answers not ready on download (400 JSON while scheduled) and parts (400 text) while the job runs', async () => {
    // On another dataset: this one already runs 100 jobs.
    const id = await startJob(emu, {
      dataset_id: JOB_LISTINGS_ID,
      filter: { name: 'country_code', operator: '=', value: 'US' },
    });
    const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
    expect(dl.status).toBe(400);
    expect(dl.body).toEqual({ error: 'Snapshot not ready' });
    const parts = await call(emu, 'GET', `/datasets/snapshots/${id}/parts?batch_size=1000`);
    expect(parts.status).toBe(400);
    expect(parts.text).toBe('Snapshot is not ready');
  });
});

describe('a snapshot on the emulated clock: not ready in both forms, ready, kept 30 days, then expired', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    // 60 emulated s scheduled, then 200 records at 1000/min: 12 emulated s building. The test moves the clock.
    emu = await startEmulator({ seed: 8, size: 200, timeScale: 1, jobSchedulingMs: 60_000, jobRecordsPerMinute: 1000 });
  });
  afterAll(() => emu.close());

  const at = (ms: number): Promise<Answer> =>
    call(emu, 'POST', '/_emulator/clock', { json: { now: new Date(ms).toISOString() } });

  it('answers by its state at each moment', async () => {
    const id = await startJob(emu, { dataset_id: COMPANIES, filter: { name: 'followers', operator: '>=', value: 0 } });
    const created = Date.parse((await call(emu, 'GET', `/datasets/snapshots/${id}`)).body.created as string);
    const download = (): Promise<Answer> => call(emu, 'GET', `/datasets/snapshots/${id}/download`);
    const parts = (): Promise<Answer> => call(emu, 'GET', `/datasets/snapshots/${id}/parts`);
    const status = async (): Promise<string> => (await call(emu, 'GET', `/datasets/snapshots/${id}`)).body.status;

    expect(await status()).toBe('scheduled');
    expect((await download()).body).toEqual({ error: 'Snapshot not ready' });

    await at(created + 65_000);
    expect(await status()).toBe('building');
    const building = await download();
    expect([building.status, building.text]).toEqual([202, 'Snapshot is building. Try again in a few minutes']);
    expect([(await parts()).status, (await parts()).text]).toEqual([400, 'Snapshot is not ready']);

    // Finished 72 emulated s after it was created; kept 30 days from then.
    const finished = created + 72_000;
    const DAYS_30 = 30 * 86_400_000;
    await at(finished + DAYS_30 - 3_600_000);
    expect(await status()).toBe('ready');
    expect((await download()).status).toBe(200);
    expect((await parts()).body).toEqual({ parts: 1 });

    await at(finished + DAYS_30);
    // The record of the job stays readable (and listed); its data does not.
    expect(await status()).toBe('ready');
    const expired = await download();
    expect([expired.status, expired.body]).toEqual([400, { error: 'Snapshot is expired' }]);
    const expiredParts = await parts();
    expect([expiredParts.status, expiredParts.text]).toEqual([400, 'Snapshot is expired']);
  });

  it('under retentionDays: 0 a snapshot never expires', async () => {
    const keep = await startEmulator({
      seed: 8,
      size: 50,
      datasets: { retentionDays: 0 },
      now: Date.parse('2025-03-01T00:00:00Z'),
    });
    try {
      const id = await startJob(keep, {
        dataset_id: COMPANIES,
        filter: { name: 'followers', operator: '>=', value: 0 },
      });
      await call(keep, 'POST', '/_emulator/clock', { json: { advance: '400d' } });
      expect((await call(keep, 'GET', `/datasets/snapshots/${id}/download`)).status).toBe(200);
    } finally {
      await keep.close();
    }
  });
});
