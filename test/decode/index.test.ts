import { describe, expect, it } from 'vitest';
import { companyRecord, toCsv, toJsonl } from '../../bench/lib/company-records.js';
import { SluiceError } from '../../src/core/errors.js';
import { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_SIZE, decode } from '../../src/decode/index.js';
import { decodeAll } from './helpers.js';

/** Two chunks, split at `at`. */
async function* split(bytes: Buffer, at: number): AsyncGenerator<Uint8Array> {
  yield bytes.subarray(0, at);
  yield bytes.subarray(at);
}

async function decodeSplit(bytes: Buffer, at: number, format: 'jsonl' | 'json' | 'csv', path?: string) {
  const rows: unknown[] = [];
  const dead: unknown[] = [];
  for await (const b of decode(split(bytes, at), {
    format,
    unit: 'u',
    deadLetter: (d) => dead.push(d),
    jsonColumns: 'auto',
    ...(path !== undefined && { path }),
  }))
    rows.push(...b);
  return { rows, dead };
}

const tricky = [
  { a: 'x "q" \\ \\\\" ] } , 東京🚀', b: [{ c: null }], 'd\\"e': '' },
  { a: 'é\n\r\t', b: [], 'd\\"e': 'x' },
];

describe('decode: every format, split at every byte', () => {
  const inputs: [string, 'jsonl' | 'json' | 'csv', Buffer, string?][] = [
    [
      'jsonl',
      'jsonl',
      Buffer.from('\uFEFF' + toJsonl(tricky).replace('\n', '\r\n') + '\n' + JSON.stringify(tricky[0])),
    ],
    ['json', 'json', Buffer.from('\uFEFF ' + JSON.stringify(tricky, null, 1))],
    [
      'json, one element per line',
      'json',
      Buffer.from('[\n' + tricky.map((t) => JSON.stringify(t)).join(',\r\n') + '\n]'),
    ],
    ['json at a path', 'json', Buffer.from(JSON.stringify({ x: { 'y"]': tricky }, items: tricky, z: '}' })), 'items'],
    ['csv', 'csv', Buffer.from('\uFEFF' + toCsv(tricky))],
  ];
  it.each(inputs)('%s', async (_name, format, bytes, path) => {
    const whole = await decodeSplit(bytes, bytes.length, format, path);
    expect(whole.dead).toEqual([]);
    expect(whole.rows.length).toBeGreaterThanOrEqual(2);
    for (let at = 0; at <= bytes.length; at++) expect(await decodeSplit(bytes, at, format, path)).toEqual(whole);
  });
});

describe('decode: options', () => {
  it('gives the same records from JSONL, a JSON array and CSV (CSV scalars as text)', async () => {
    const records = Array.from({ length: 12 }, (_, i) => companyRecord(i, 8));
    const jsonl = await decodeAll(toJsonl(records), { format: 'jsonl' });
    const json = await decodeAll(JSON.stringify(records), { format: 'json' });
    const csv = await decodeAll(toCsv(records), { format: 'csv', jsonColumns: 'auto' });
    expect(jsonl.rows).toEqual(records);
    expect(json.rows).toEqual(records);
    for (const [i, row] of csv.rows.entries())
      for (const [k, v] of Object.entries(records[i]!))
        expect(row[k]).toEqual(v === null || typeof v === 'object' ? v : String(v));
  });

  it('by default closes batches at DEFAULT_BATCH_BYTES of input, or DEFAULT_BATCH_SIZE tiny records', async () => {
    const big = Array.from({ length: 300 }, (_, i) => companyRecord(i, 2));
    const bigText = toJsonl(big);
    const { batches } = await decodeAll(bigText, { format: 'jsonl' });
    expect(batches.length).toBeGreaterThan(1);
    for (const b of batches.slice(0, -1)) {
      const bytes = Buffer.byteLength(toJsonl(b)) - b.length; // without the newlines, as the decoder counts
      expect(bytes).toBeGreaterThanOrEqual(DEFAULT_BATCH_BYTES);
      expect(bytes - Buffer.byteLength(JSON.stringify(b.at(-1)))).toBeLessThan(DEFAULT_BATCH_BYTES);
    }
    const tiny = toJsonl(Array.from({ length: DEFAULT_BATCH_SIZE + 5 }, (_, i) => ({ i })));
    expect((await decodeAll(tiny, { format: 'jsonl' })).batches.map((b) => b.length)).toEqual([DEFAULT_BATCH_SIZE, 5]);
  });

  it('refuses a batch size that is not a positive integer, and an unknown format', () => {
    const base = { unit: 'u', deadLetter: () => {} };
    const none = split(Buffer.alloc(0), 0);
    expect(() => decode(none, { ...base, format: 'jsonl', batchSize: 0 })).toThrow(SluiceError);
    expect(() => decode(none, { ...base, format: 'jsonl', batchSize: 2.5 })).toThrow(/positive integer/);
    expect(() => decode(none, { ...base, format: 'xml' as 'json' })).toThrow(/unknown decode format "xml"/);
  });

  it('rejects a malformed path before reading anything', async () => {
    let pulled = false;
    async function* body(): AsyncGenerator<Uint8Array> {
      pulled = true;
      yield Buffer.from('{}');
    }
    const it = decode(body(), { format: 'json', path: 'a..b', unit: 'u', deadLetter: () => {} })[
      Symbol.asyncIterator
    ]();
    await expect(it.next()).rejects.toThrow(/invalid JSON path "a..b"/);
    expect(pulled).toBe(false);
  });
});
