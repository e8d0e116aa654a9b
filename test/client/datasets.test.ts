/**
 * The datasets client (`client.datasets.*`, `pollSnapshot`) against the emulator over real HTTP: the whole
 * filter → poll → parts → download path, multipart filters with files, and how the service's refusals surface.
 */
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotReadyError, ServiceError, createClient, pollSnapshot, type ServiceClient } from '../../src/client/index.js';
import { failureReason } from '../../src/client/poll.js';
import { matchesNothing } from '../../src/sources/filter.js';
import { DecodeError, NetworkError, SluiceError } from '../../src/core/errors.js';
import { isTransient } from '../../src/core/retry.js';
import { decode } from '../../src/decode/index.js';
import { COMPANY_PROFILES_ID, companyProfile } from '../../src/emulator/data/company-profiles.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

type Obj = Record<string, any>;
const SEED = 21;
const SIZE = 2500;
const POLL = { intervalMs: 5, maxIntervalMs: 20, timeoutMs: 20_000 };
const records = Array.from({ length: SIZE }, (_, i) => companyProfile(SEED, i)) as Obj[];

let emu: EmulatorHandle;
let client: ServiceClient;
beforeAll(async () => {
  emu = await startEmulator({ seed: SEED, size: SIZE, timeScale: 2000 });
  client = createClient({ baseUrl: emu.url, apiKey: 'emulator-key', retry: { retries: 0 } });
});
afterAll(async () => {
  await client.close();
  await emu.close();
});

/** Every record of a download body: gunzipped when it is gzip, then JSON lines. */
async function jsonLines(body: Readable, gzip: boolean): Promise<Obj[]> {
  const stream = gzip ? body.pipe(createGunzip()) : body;
  const chunks: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks)
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Obj);
}

describe('catalogue', () => {
  it('lists datasets and reads metadata', async () => {
    const list = await client.datasets.list();
    expect(list.find((d) => d.id === COMPANY_PROFILES_ID)).toMatchObject({ size: SIZE });
    const meta = await client.datasets.metadata(COMPANY_PROFILES_ID);
    expect(meta.id).toBe(COMPANY_PROFILES_ID);
    expect(meta.fields.followers).toMatchObject({ type: 'number' });
  });

  it('an unknown dataset is a ServiceError 404 carrying the service message', async () => {
    const err = await client.datasets.metadata('gd_nothing').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ status: 404, serviceMessage: 'dataset does not exist' });
  });
});

describe('filter → poll → parts → download', () => {
  it('downloads every part of a ready snapshot, compressed, and gets exactly the matching records', async () => {
    const filter = {
      operator: 'and',
      filters: [
        { name: 'country_code', operator: 'in', value: ['US', 'GB', 'IN'] },
        { name: 'followers', operator: '>=', value: 50 },
      ],
    };
    const { snapshot_id } = await client.datasets.filter({ dataset_id: COMPANY_PROFILES_ID, filter });
    const statuses: string[] = [];
    const meta = await pollSnapshot(client, snapshot_id, { ...POLL, onStatus: (m) => statuses.push(m.status) });
    expect(meta.status).toBe('ready');
    expect(statuses[statuses.length - 1]).toBe('ready');
    const expected = records.filter((r) => ['US', 'GB', 'IN'].includes(r.country_code) && r.followers >= 50);
    expect(meta.dataset_size).toBe(expected.length);

    const params = { format: 'jsonl', compress: true, batch_size: 1000 } as const;
    const { parts } = await client.datasets.parts(snapshot_id, params);
    expect(parts).toBe(Math.ceil(expected.length / 1000));
    const got: Obj[] = [];
    for (let part = 1; part <= parts; part++) {
      const dl = await client.datasets.download(snapshot_id, { ...params, part });
      expect(dl.status).toBe(200);
      got.push(...(await jsonLines(dl.body, true)));
    }
    expect(got.map((r) => r.id)).toEqual(expected.map((r) => r.id));
    expect(got[0]).toEqual(expected[0]);
  });

  it('filters with uploaded CSV and JSON files (multipart) through the client', async () => {
    const filter = {
      operator: 'and',
      filters: [
        { name: 'country_code', operator: 'in', value: 'countries.csv' },
        { name: 'industries', operator: 'not_in', value: 'industries.json' },
      ],
    };
    const { snapshot_id } = await client.datasets.filter({
      dataset_id: COMPANY_PROFILES_ID,
      filter,
      records_limit: 40,
      files: [
        { name: 'countries.csv', content: 'country_code\nDE\nFR\n' },
        { name: 'industries.json', content: Buffer.from(JSON.stringify([{ industries: 'Retail' }])) },
      ],
    });
    const meta = await pollSnapshot(client, snapshot_id, POLL);
    const expected = records
      .filter((r) => ['DE', 'FR'].includes(r.country_code) && r.industries !== 'Retail')
      .slice(0, 40);
    expect(meta.dataset_size).toBe(expected.length);
    const dl = await client.datasets.download(snapshot_id, { format: 'jsonl' });
    expect((await jsonLines(dl.body, false)).map((r) => r.id)).toEqual(expected.map((r) => r.id));
  });

  it('a filter that matches nothing: the service’s 422, which sources read as an empty result (matchesNothing)', async () => {
    const err = await client.datasets
      .filter({ dataset_id: COMPANY_PROFILES_ID, filter: { name: 'name', operator: '=', value: 'Nobody Inc.' } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 422, serviceMessage: 'Provided filter did not match any records' });
    expect(matchesNothing(err)).toBe(true);
    expect(isTransient(err)).toBe(false);
  });

  it('pollSnapshot returns a no-match snapshot (noMatch: failed_snapshot) as failed with no_records_found', async () => {
    const live = await startEmulator({
      seed: SEED,
      size: 50,
      timeScale: 2000,
      datasets: { noMatch: 'failed_snapshot' },
    });
    const c = createClient({ baseUrl: live.url, apiKey: 'emulator-key', retry: { retries: 0 } });
    try {
      const { snapshot_id } = await c.datasets.filter({
        dataset_id: COMPANY_PROFILES_ID,
        filter: { name: 'name', operator: '=', value: 'Nobody Inc.' },
      });
      const meta = await pollSnapshot(c, snapshot_id, POLL);
      expect(meta).toMatchObject({ status: 'failed', warning_code: 'no_records_found' });
    } finally {
      await c.close();
      await live.close();
    }
  });
});

describe('not ready and refused', () => {
  let slow: EmulatorHandle;
  let slowClient: ServiceClient;
  beforeAll(async () => {
    // Real time, and a minute of scheduling: jobs stay scheduled while the test runs.
    slow = await startEmulator({ seed: SEED, size: 100, jobSchedulingMs: 60_000 });
    slowClient = createClient({ baseUrl: slow.url, apiKey: 'emulator-key', retry: { retries: 0 } });
  });
  afterAll(async () => {
    await slowClient.close();
    await slow.close();
  });

  it('"not ready" as a 400 (download JSON, parts text) is a NotReadyError like a 202, final without a wait budget', async () => {
    const { snapshot_id } = await slowClient.datasets.filter({
      dataset_id: COMPANY_PROFILES_ID,
      filter: { name: 'followers', operator: '>', value: 0 },
    });
    const err = await slowClient.datasets.download(snapshot_id, { format: 'jsonl' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotReadyError);
    expect(err).toMatchObject({ status: 400, serviceMessage: 'Snapshot not ready' });
    expect(isTransient(err)).toBe(false);
    const parts = await slowClient.datasets.parts(snapshot_id, { batch_size: 1000 }).catch((e: unknown) => e);
    expect(parts).toBeInstanceOf(NotReadyError);
    expect(parts).toMatchObject({ status: 400, serviceMessage: 'Snapshot is not ready' });
  });

  it('a 400 surfaces the validation_errors text, is not retried, and starts no job', async () => {
    const before = emu.stats.routes['POST /datasets/filter'] ?? 0;
    const paid = emu.stats.paid.filter ?? 0;
    const err = (await client.datasets
      .filter({
        dataset_id: COMPANY_PROFILES_ID,
        filter: {
          operator: 'and',
          filters: [
            { name: 'followers', operator: '>', value: 'many' },
            { name: 'name', operator: '<', value: 'M' },
          ],
        },
      })
      .catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('validation');
    expect(err.details).toEqual([
      '"filter.filters[0].value" must be a number for field "followers" (got "many")',
      '"filter.filters[1].operator" "<" applies to number and date fields; "name" is text',
    ]);
    expect(err.message).toContain('"filter.filters[0].value" must be a number');
    expect(emu.stats.routes['POST /datasets/filter']).toBe(before + 1);
    expect(emu.stats.paid.filter ?? 0).toBe(paid);
  });

  it("a file problem surfaces the spec's message", async () => {
    const err = await client.datasets
      .filter({
        dataset_id: COMPANY_PROFILES_ID,
        filter: { name: 'country_code', operator: 'in', value: 'countries.csv' },
        files: [{ name: 'countries.csv', content: 'country\nUS\n' }],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).serviceMessage).toMatch(/^Invalid file format: the header of countries\.csv/);
  });

  it('pollSnapshot stops at once on a canceled job (the 5-minute limit), with its reason and what to change', async () => {
    const capped = await startEmulator({ seed: SEED, size: 10_000, timeScale: 600, jobRecordsPerMinute: 1000 });
    const c = createClient({ baseUrl: capped.url, apiKey: 'emulator-key' });
    try {
      const { snapshot_id } = await c.datasets.filter({
        dataset_id: COMPANY_PROFILES_ID,
        filter: { name: 'followers', operator: '>=', value: 0 },
      });
      const statuses: string[] = [];
      const err = await pollSnapshot(c, snapshot_id, { ...POLL, onStatus: (m) => statuses.push(m.status) }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SluiceError);
      // Not "still canceled after 20 s of waiting": a canceled job is over.
      expect((err as SluiceError).message).toBe(
        `snapshot ${snapshot_id} was canceled: Job was cancelled: it exceeded the 5-minute limit`,
      );
      expect(statuses.at(-1)).toBe('canceled');
      expect((err as SluiceError).hint).toMatch(
        /longer than 5 minutes: narrow source\.filter or lower source\.records_limit/,
      );
    } finally {
      await c.close();
      await capped.close();
    }
  });
});

describe('why a snapshot failed', () => {
  it('is read from error, error_message, failure_reason, warning or message, in that order', () => {
    const base = { id: 's', status: 'failed' };
    expect(failureReason({ ...base, error: 'e', message: 'm' })).toBe('e');
    expect(failureReason({ ...base, error_message: 'em' })).toBe('em');
    expect(failureReason({ ...base, failure_reason: 'fr', warning: 'w' })).toBe('fr');
    expect(failureReason({ ...base, warning: 'w' })).toBe('w');
    expect(failureReason({ ...base, message: 'm' })).toBe('m');
    expect(failureReason({ ...base, error: ' ' })).toBeUndefined();
  });
});

describe('a snapshot body that arrives broken', () => {
  it.each([
    ['reset', 'the connection dropped mid-body: the client’s network error, passed through the decoder unchanged'],
    ['truncated_gzip', 'the gzip stream ends early: a DecodeError from the decoder'],
  ])('%s: %s; either way transient', async (kind) => {
    const faulty = await startEmulator({
      seed: SEED,
      size: SIZE,
      timeScale: 2000,
      faults: {
        rules: [
          {
            route: 'GET /datasets/snapshots/*/download',
            rate: 1,
            faults: { [kind]: 1 },
            reset_after_bytes: 50_000,
          },
        ],
      },
    });
    const c = createClient({ baseUrl: faulty.url, apiKey: 'emulator-key', retry: { retries: 0 } });
    try {
      const { snapshot_id } = await c.datasets.filter({
        dataset_id: COMPANY_PROFILES_ID,
        filter: { name: 'followers', operator: '>=', value: 0 },
      });
      await pollSnapshot(c, snapshot_id, POLL);
      const dl = await c.datasets.download(snapshot_id, { format: 'jsonl', compress: true });
      let err: unknown;
      try {
        for await (const _ of decode(dl.body, { format: 'jsonl', unit: 'u', deadLetter: () => undefined }));
      } catch (e) {
        err = e;
      }
      expect(faulty.stats.faults[kind]).toBe(1);
      if (kind === 'reset') {
        expect(err).toBeInstanceOf(ServiceError);
        expect((err as ServiceError).cause).toBeInstanceOf(NetworkError);
        expect(err).toMatchObject({ status: 0, sent: true });
      } else expect(err).toBeInstanceOf(DecodeError);
      expect(isTransient(err)).toBe(true);
    } finally {
      await c.close();
      await faulty.close();
    }
  });
});
