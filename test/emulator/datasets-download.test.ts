/**
 * Snapshot downloads over real HTTP: every format, compressed or not; parts that partition the snapshot exactly;
 * a CSV round trip of nested values; parameter validation worded like the service; errors by snapshot state.
 */
import { parse } from 'csv-parse/sync';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { COMPANIES, call, parseJsonRecords, startJob, waitFinal, type Obj } from './datasets-harness.js';
import { rawRequest } from './raw-http.js';

const SEED = 9;
const SIZE = 1600;
const FILTER = { name: 'followers', operator: '>=', value: 100 };

let emu: EmulatorHandle;
let id: string;
let expected: Obj[];
beforeAll(async () => {
  emu = await startEmulator({ seed: SEED, size: SIZE, timeScale: 2000 });
  id = await startJob(emu, { dataset_id: COMPANIES, filter: FILTER });
  const { meta } = await waitFinal(emu, id);
  expect(meta.status).toBe('ready');
  expected = Array.from({ length: SIZE }, (_, i) => companyProfile(SEED, i) as Obj).filter((r) => r.followers >= 100);
  // Two parts of 1000, the last one short.
  expect(expected.length).toBeGreaterThan(1000);
  expect(expected.length % 1000).not.toBe(0);
});
afterAll(() => emu.close());

const download = (query: string) => call(emu, 'GET', `/datasets/snapshots/${id}/download${query}`);
const isGzip = (b: Buffer): boolean => b[0] === 0x1f && b[1] === 0x8b;

describe('formats', () => {
  it('jsonl by default, content-type application/jsonl, one record per line', async () => {
    const res = await download('');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/jsonl');
    expect(res.text.endsWith('\n')).toBe(true);
    const lines = res.text.split('\n').slice(0, -1);
    expect(lines.map((l) => JSON.parse(l))).toEqual(expected);
  });

  it('json: one array', async () => {
    const res = await download('?format=json');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(res.text)).toEqual(expected);
  });

  it('ndjson is accepted as jsonl', async () => {
    const res = await download('?format=ndjson&batch_size=1000&part=2');
    expect(parseJsonRecords(res.bytes)).toEqual(expected.slice(1000, 2000));
  });

  it('compress=true sends gzip bytes of the same content, in every format', async () => {
    for (const format of ['jsonl', 'json', 'csv']) {
      const plain = await download(`?format=${format}`);
      const gz = await download(`?format=${format}&compress=true`);
      expect(gz.status).toBe(200);
      expect(gz.headers.get('content-type')).toBe('application/gzip');
      expect(isGzip(gz.bytes)).toBe(true);
      expect(gunzipSync(gz.bytes).equals(plain.bytes)).toBe(true);
      expect(gz.bytes.length).toBeLessThan(plain.bytes.length / 2);
    }
    const off = await download('?compress=false');
    expect(isGzip(off.bytes)).toBe(false);
  });

  it('csv: header of the dataset fields; nested values as JSON text and null as an empty cell round-trip', async () => {
    const res = await download('?format=csv');
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = parse(res.text, { columns: false }) as string[][];
    const header = rows[0]!;
    expect(header).toEqual(Object.keys(expected[0]!));
    expect(rows.length - 1).toBe(expected.length);
    let nested = 0;
    let nulls = 0;
    rows.slice(1).forEach((row, k) => {
      const rec = expected[k]!;
      header.forEach((col, c) => {
        const cell = row[c]!;
        const v = rec[col];
        if (v === null) {
          nulls++;
          expect(cell).toBe('');
        } else if (typeof v === 'object') {
          nested++;
          expect(JSON.parse(cell)).toEqual(v);
        } else expect(cell).toBe(String(v));
      });
    });
    // The round trip covered many nested values (employees, updates with optional fields, funding) and nulls.
    expect(nested).toBeGreaterThan(expected.length * 5);
    expect(nulls).toBeGreaterThan(expected.length / 2);
  });
});

describe('parts', () => {
  it('/parts counts the parts for a batch size; without one the snapshot is one part', async () => {
    const n = Math.ceil(expected.length / 1000);
    for (const q of [
      '?batch_size=1000',
      '?batch_size=1000&format=jsonl&compress=true',
      '?batch_size=1000&format=csv',
    ]) {
      const res = await call(emu, 'GET', `/datasets/snapshots/${id}/parts${q}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ parts: n });
    }
    expect((await call(emu, 'GET', `/datasets/snapshots/${id}/parts?batch_size=5000`)).body).toEqual({ parts: 1 });
    expect((await call(emu, 'GET', `/datasets/snapshots/${id}/parts`)).body).toEqual({ parts: 1 });
  });

  it('parts concatenated are the whole snapshot, in every format, compressed or not', async () => {
    const ids = expected.map((r) => r.id);
    const { parts } = (await call(emu, 'GET', `/datasets/snapshots/${id}/parts?batch_size=1000`)).body;
    for (const [format, compress] of [
      ['jsonl', false],
      ['json', true],
      ['csv', true],
    ] as const) {
      const got: string[] = [];
      for (let part = 1; part <= parts; part++) {
        const res = await download(`?format=${format}&compress=${compress}&batch_size=1000&part=${part}`);
        expect(res.status).toBe(200);
        const body = compress ? gunzipSync(res.bytes) : res.bytes;
        const records = format === 'csv' ? (parse(body, { columns: true }) as Obj[]) : parseJsonRecords(body);
        expect(records.length).toBe(part < parts ? 1000 : expected.length % 1000);
        got.push(...records.map((r) => r.id as string));
      }
      expect(got).toEqual(ids);
    }
  });

  it('part without batch_size: part 1 is everything', async () => {
    const res = await download('?part=1');
    expect(parseJsonRecords(res.bytes).length).toBe(expected.length);
  });

  it('a part past the last is a 400 that says how many parts there are', async () => {
    const res = await download('?batch_size=1000&part=3');
    expect(res.status).toBe(400);
    expect(res.body.validation_errors).toEqual([
      `"part" must be less than or equal to 2 (${expected.length} records in parts of 1000)`,
    ]);
    expect((await download('?part=2')).status).toBe(400);
  });
});

describe('validation and errors', () => {
  it('rejects bad parameters with the service wording, all at once', async () => {
    const res = await download('?format=xml&compress=yes&batch_size=999&part=0');
    expect(res.status).toBe(400);
    expect(res.body.validation_errors).toEqual([
      '"format" must be one of [json, ndjson, jsonl, csv]',
      '"compress" must be a boolean',
      '"batch_size" must be greater than or equal to 1000',
      '"part" must be greater than or equal to 1',
    ]);
    const more = await download('?batch_size=abc&part=1.5');
    expect(more.body.validation_errors).toEqual(['"batch_size" must be a number', '"part" must be an integer']);
    const parts = await call(emu, 'GET', `/datasets/snapshots/${id}/parts?batch_size=10`);
    expect(parts.status).toBe(400);
    expect(parts.body.validation_errors).toEqual(['"batch_size" must be greater than or equal to 1000']);
  });

  it('unknown snapshot: JSON 404 on download, plain-text 404 on parts', async () => {
    const dl = await call(emu, 'GET', '/datasets/snapshots/snap_nope/download');
    expect(dl.status).toBe(404);
    expect(dl.body).toEqual({ error: 'Snapshot not found' });
    const parts = await call(emu, 'GET', '/datasets/snapshots/snap_nope/parts');
    expect(parts.status).toBe(404);
    expect(parts.text).toBe('snapshot not found');
  });

  it('a failed snapshot answers 400 with the reason on download and parts', async () => {
    // A no-match job, which the default emulator refuses up front (422) instead of starting.
    const live = await startEmulator({
      seed: SEED,
      size: 100,
      timeScale: 2000,
      datasets: { noMatch: 'failed_snapshot' },
    });
    try {
      const failed = await startJob(live, {
        dataset_id: COMPANIES,
        filter: { name: 'name', operator: '=', value: '-' },
      });
      expect((await waitFinal(live, failed)).meta.status).toBe('failed');
      for (const path of ['download', 'parts']) {
        const res = await call(live, 'GET', `/datasets/snapshots/${failed}/${path}`);
        expect(res.status).toBe(400);
        expect(res.body.error).toBe(
          `Snapshot ${failed} failed: Provided filter did not match any records (no_records_found); it has no records to download`,
        );
      }
    } finally {
      await live.close();
    }
  });
});

describe('streaming', () => {
  it('sends a body larger than any buffer in many chunks, chunked, with a file name', async () => {
    const res = await fetch(`${emu.url}/datasets/snapshots/${id}/download?format=jsonl`, {
      headers: { authorization: 'Bearer emulator-key' },
    });
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${id}.jsonl"`);
    let chunks = 0;
    let bytes = 0;
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) {
      chunks++;
      bytes += c.length;
    }
    expect(bytes).toBeGreaterThan(3_000_000);
    expect(chunks).toBeGreaterThan(20);
  });
});

describe('fault injection on downloads', () => {
  it('applies the server faults to streamed snapshot bodies (truncated gzip, reset mid-body)', async () => {
    const faulty = await startEmulator({
      seed: SEED,
      size: 1500,
      timeScale: 2000,
      faults: {
        rules: [
          {
            route: 'GET /datasets/snapshots/*/download',
            rate: 1,
            faults: { truncated_gzip: 1, reset: 1 },
            reset_after_bytes: 100_000,
          },
        ],
      },
    });
    try {
      const snap = await startJob(faulty, { dataset_id: COMPANIES, filter: FILTER });
      expect((await waitFinal(faulty, snap)).meta.status).toBe('ready');
      const kinds = new Set<string>();
      for (let i = 0; i < 8 && kinds.size < 2; i++) {
        const res = await rawRequest(`${faulty.url}/datasets/snapshots/${snap}/download?compress=true`, {
          headers: { authorization: 'Bearer emulator-key' },
        });
        expect(res.status).toBe(200);
        // Either way the body is not a whole gzip stream.
        expect(() => gunzipSync(res.body)).toThrow();
        kinds.add(res.complete ? 'truncated_gzip' : 'reset');
      }
      expect([...kinds].sort()).toEqual(['reset', 'truncated_gzip']);
      expect(faulty.stats.faults).toMatchObject({ truncated_gzip: expect.any(Number), reset: expect.any(Number) });
    } finally {
      await faulty.close();
    }
  });
});
