/**
 * `POST /datasets/filter` over real HTTP: results of representative filters (datasets-filter-cases.ts) against an
 * independent evaluation over the same generated records; records_limit; a filter that matches nothing.
 * (Every rejection: datasets-filter-rejections.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { CASES, ID_FIELD, SEED, SIZE, all } from './datasets-filter-cases.js';
import { COMPANIES, call, filterForm, filterRecords, startJob, waitFinal, type Obj } from './datasets-harness.js';

let emu: EmulatorHandle;
beforeAll(async () => {
  // Scheduling of 4 emulated seconds passes in 2 real ms.
  emu = await startEmulator({ seed: SEED, size: SIZE, timeScale: 2000 });
});
afterAll(() => emu.close());

describe('filter results match an independent evaluation', () => {
  // Concurrent: each case is one job on the same emulator, and jobs run side by side.
  it.concurrent.for(CASES)('$title', async (c, { expect }) => {
    const dataset = c.dataset ?? COMPANIES;
    const idField = ID_FIELD[dataset]!;
    const expected = all[dataset]!.filter(c.expect).map((r) => r[idField]);
    // Each case must discriminate: neither nothing nor everything.
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(SIZE);
    const request = { dataset_id: dataset, filter: c.filter };
    const got = await filterRecords(emu, request, c.files ? filterForm(c.filter, c.files) : undefined);
    expect(got.map((r) => r[idField])).toEqual(expected);
    // The records are the dataset's records, whole.
    expect(got[0]).toEqual(all[dataset]!.find((r) => r[idField] === expected[0]));
  });

  it('combine_nested_fields changes the result (the two cases above differ)', () => {
    const [combined, loose] = CASES.filter((c) => c.title.includes('combine_nested_fields')).map(
      (c) => all[COMPANIES]!.filter(c.expect).length,
    );
    expect(combined).toBeLessThan(loose!);
  });

  it('records_limit keeps the first matches in dataset order', async () => {
    const filter = { name: 'country_code', operator: '=', value: 'US' };
    const expected = all[COMPANIES]!.filter((r) => r.country_code === 'US')
      .slice(0, 7)
      .map((r) => r.id);
    const got = await filterRecords(emu, { dataset_id: COMPANIES, records_limit: 7, filter });
    expect(got.map((r) => r.id)).toEqual(expected);
  });

  it('records_limit works in multipart mode (query string)', async () => {
    const filter = { name: 'country_code', operator: 'in', value: 'c.csv' };
    const form = filterForm(filter, [{ name: 'c.csv', content: 'country_code\nGB\n' }]);
    const got = await filterRecords(emu, { dataset_id: COMPANIES, records_limit: 3 }, form);
    expect(got.map((r) => r.id)).toEqual(
      all[COMPANIES]!.filter((r) => r.country_code === 'GB')
        .slice(0, 3)
        .map((r) => r.id),
    );
  });

  it('a filter that matches nothing answers 422 up front: no job, nothing charged', async () => {
    const paid = emu.stats.paid.filter ?? 0;
    const listed = (await call(emu, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`)).body as Obj[];
    const res = await call(emu, 'POST', '/datasets/filter', {
      json: { dataset_id: COMPANIES, filter: { name: 'name', operator: '=', value: 'No Such Co' } },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'Provided filter did not match any records' });
    expect(emu.stats.paid.filter ?? 0).toBe(paid);
    expect((await call(emu, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`)).body).toHaveLength(listed.length);
  });

  it('under noMatch: failed_snapshot, the job starts and fails with no_records_found instead', async () => {
    const other = await startEmulator({
      seed: SEED,
      size: 200,
      timeScale: 2000,
      datasets: { noMatch: 'failed_snapshot' },
    });
    try {
      const id = await startJob(other, {
        dataset_id: COMPANIES,
        filter: { name: 'name', operator: '=', value: 'No Such Co' },
      });
      const { meta } = await waitFinal(other, id);
      expect(meta).toMatchObject({
        status: 'failed',
        warning: 'Provided filter did not match any records',
        warning_code: 'no_records_found',
      });
      expect(other.stats.recordsCharged).toBe(0);
    } finally {
      await other.close();
    }
  });
});
