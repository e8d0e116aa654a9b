/**
 * The decoders under the unit's bounds (core/limits.ts): a record over the size limit is dead-lettered with its
 * offset and the limit and skipped without being held, in every format and chunking; the header of a CSV or a key
 * on a JSON path cannot be skipped and fails the unit; the unit fails past its size, its inflate ratio or its
 * announced records; an aborted signal stops the read. The raw-path checker (checked-bytes.ts) does the same on
 * its way to disk.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { LimitExceeded } from '../../src/core/limits.js';
import type { DeadLetter } from '../../src/core/types.js';
import { checkedBytes } from '../../src/decode/index.js';
import { chunks, decodeAll, decodeError, type Chunking } from './helpers.js';

const MAX = 1024;
const bounds = (limits: Record<string, number> = {}, announced?: number) => ({
  limits: { maxRecordBytes: MAX, ...limits },
  ...(announced !== undefined && { announcedRecords: { count: announced, by: 'the test' } }),
});
const CHUNKINGS: Chunking[] = [65536, 100, 'random'];

/** A record far over MAX, whose first bytes are recognisable. */
const big = (n = 50_000): string => `{"id":"big","pad":"${'p'.repeat(n)}"}`;

function expectOversized(letters: DeadLetter[], offset: number, what: RegExp): void {
  expect(letters).toHaveLength(1);
  const [d] = letters;
  expect(d!.offset).toBe(offset);
  expect(d!.reason).toMatch(what);
  expect(d!.reason).toMatch(/over the record size limit of 1 KiB \(limits\.max_record_bytes\); skipped unread/);
  expect(d!.raw!.startsWith('{"id":"big"')).toBe(true);
  expect(d!.raw!.length).toBeLessThanOrEqual(1025);
}

describe.each(CHUNKINGS)('a record over max_record_bytes, chunks of %s', (chunking) => {
  it('JSONL: the line is dead-lettered with its offset, the lines around it decoded', async () => {
    const text = `{"id":1}\n${big()}\n{"id":2}\n`;
    const r = await decodeAll(text, { format: 'jsonl', bounds: bounds() }, chunking);
    expect(r.rows).toEqual([{ id: 1 }, { id: 2 }]);
    expectOversized(r.deadLetters, 9, /^line \(48\.8 KiB\) is over/);
  });

  it('JSONL: a last line without a newline that is over the limit says the input ends inside it', async () => {
    const r = await decodeAll(`{"id":1}\n${big()}`, { format: 'jsonl', bounds: bounds() }, chunking);
    expect(r.rows).toEqual([{ id: 1 }]);
    expectOversized(r.deadLetters, 9, /^line \(48\.8 KiB or more: the input ends inside it\)/);
  });

  it('JSON array: the element is dead-lettered, its end found by the structure', async () => {
    // Brackets and quotes inside the big element's strings must not end it early.
    const inner = `{"id":"big","pad":"${'p'.repeat(30_000)}","tricky":"]}[{\\"","nested":[{"a":[1,2]}]}`;
    for (const layout of [`[{"id":1},${inner},{"id":2}]`, `[\n{"id":1},\n${inner},\n{"id":2}\n]`]) {
      const r = await decodeAll(layout, { format: 'json', bounds: bounds() }, chunking);
      expect(r.rows).toEqual([{ id: 1 }, { id: 2 }]);
      expectOversized(r.deadLetters, layout.indexOf('{"id":"big"'), /^array element \(29\.4 KiB\) is over/);
    }
  });

  it('JSON array at a path: the same, the document around it read', async () => {
    const doc = `{"meta":{"n":3},"data":{"items":[{"id":1},${big()},{"id":2}]},"after":true}`;
    const r = await decodeAll(doc, { format: 'json', path: 'data.items', bounds: bounds() }, chunking);
    expect(r.rows).toEqual([{ id: 1 }, { id: 2 }]);
    expectOversized(r.deadLetters, doc.indexOf('{"id":"big"'), /^array element/);
  });

  it('CSV: the record is dead-lettered, quoted commas and line breaks inside it skipped over', async () => {
    const cell = `"{""id"":""big"",""x"":""${'a,\n'.repeat(20_000)}"""`;
    const text = `id,body\n1,one\n2,${cell}\n3,three\n`;
    const r = await decodeAll(text, { format: 'csv', bounds: bounds() }, chunking);
    expect(r.rows).toEqual([
      { id: '1', body: 'one' },
      { id: '3', body: 'three' },
    ]);
    expect(r.deadLetters).toHaveLength(1);
    expect(r.deadLetters[0]!.offset).toBe(text.indexOf('2,"'));
    expect(r.deadLetters[0]!.reason).toMatch(/^CSV row 2 \(58\.6 KiB\) is over the record size limit of 1 KiB/);
  });

  it('CSV: a quoted field the input ends inside, a little over the limit, is dead-lettered by its length', async () => {
    // Past the limit but short of twice it: the parser waits for its record to double before parsing it again,
    // but never past the limit, so the record is found over it rather than parsed whole as a cut body.
    const text = `id,body\n1,one\n2,"${'b'.repeat(1500)}`;
    const r = await decodeAll(text, { format: 'csv', bounds: bounds() }, chunking);
    expect(r.rows).toEqual([{ id: '1', body: 'one' }]);
    expect(r.deadLetters).toHaveLength(1);
    expect(r.deadLetters[0]!.offset).toBe(text.indexOf('2,"'));
    expect(r.deadLetters[0]!.reason).toMatch(/^CSV row 2 \(.* or more: the input ends inside it\) is over the record/);
  });
});

describe('what cannot be skipped fails the unit', () => {
  it('a CSV header over the limit', async () => {
    const err = await decodeError(`${'h'.repeat(5000)},b\n1,2\n`, { format: 'csv', bounds: bounds() }, 100);
    expect(err).toBeInstanceOf(LimitExceeded);
    expect((err as Error).message).toMatch(/the CSV header is over the record size limit of 1 KiB/);
  });

  it('a key of an object on the path to the array', async () => {
    const doc = `{"${'k'.repeat(5000)}":1,"items":[{"id":1}]}`;
    const err = await decodeError(doc, { format: 'json', path: 'items', bounds: bounds() }, 100);
    expect(err).toBeInstanceOf(LimitExceeded);
    expect((err as Error).message).toMatch(/a key of the JSON document is over the record size limit/);
  });
});

describe('the unit', () => {
  const lines = (n: number): string => Array.from({ length: n }, (_, i) => `{"id":${i}}\n`).join('');

  it('fails past max_unit_bytes, plain or gzip', async () => {
    for (const input of [Buffer.from(lines(5000)), gzipSync(lines(5000))]) {
      const err = await decodeError(input, { format: 'jsonl', bounds: bounds({ maxUnitBytes: 20_000 }) });
      expect((err as LimitExceeded).limit).toBe('maxUnitBytes');
      expect((err as Error).message).toMatch(
        /more than 19\.5 KiB of data in one unit \(decompressed; limits\.max_unit_bytes\)/,
      );
    }
  });

  it('fails past max_inflate_ratio: a gzip bomb is stopped long before it is spent', async () => {
    const member = gzipSync(Buffer.alloc(1 << 20, 'a'), { level: 9 });
    // 400 MiB inflated if read to the end; stopped after a few MiB.
    const bomb = Buffer.concat(Array.from({ length: 400 }, () => member));
    const err = await decodeError(bomb, { format: 'jsonl', bounds: bounds({ maxInflateRatio: 20 }) });
    expect((err as LimitExceeded).limit).toBe('maxInflateRatio');
    expect((err as Error).message).toMatch(/the gzip body inflates more than 20×/);
  });

  it('fails past the announced records and the margin, on every format', async () => {
    const json = `[${Array.from({ length: 12 }, (_, i) => `{"id":${i}}`).join(',')}]`;
    const csv = `id\n${Array.from({ length: 12 }, (_, i) => `${i}\n`).join('')}`;
    for (const [format, input] of [
      ['jsonl', lines(12)],
      ['json', json],
      ['csv', csv],
    ] as const) {
      const err = await decodeError(input, { format, bounds: bounds({ recordsMargin: 0.1 }, 10) });
      expect((err as LimitExceeded).limit, format).toBe('recordsMargin');
      expect((err as Error).message).toMatch(/more than 11 records, where the test says 10/);
      const ok = await decodeAll(input, { format, bounds: bounds({ recordsMargin: 0.2 }, 10) });
      expect(ok.rows).toHaveLength(12);
    }
  });

  it('stops with the signal’s reason when it aborts', async () => {
    const stop = new AbortController();
    const reason = new Error('stopped');
    stop.abort(reason);
    const err = await decodeError(lines(10), { format: 'jsonl', bounds: { signal: stop.signal } });
    expect(err).toBe(reason);
  });
});

describe('checkedBytes (the fast path’s download to disk)', () => {
  async function checked(input: Buffer | string, chunking: Chunking, announced?: number, margin = 0) {
    const letters: DeadLetter[] = [];
    const out: Buffer[] = [];
    const bytes = typeof input === 'string' ? Buffer.from(input) : input;
    for await (const b of checkedBytes(chunks(bytes, chunking), {
      format: 'jsonl',
      unit: 'unit:test',
      deadLetter: (d) => letters.push(d),
      bounds: bounds({ recordsMargin: margin }, announced),
    }))
      out.push(Buffer.from(b));
    return { text: Buffer.concat(out).toString(), letters };
  }

  it.each(CHUNKINGS)(
    'leaves over-long lines out (dead-lettered), the rest byte for byte, gunzipped; chunks of %s',
    async (c) => {
      const text = `{"id":1}\n\n${big()}\n{"id":2}\r\n${big(2000)}\n{"id":3}`;
      const r = await checked(gzipSync(text), c);
      expect(r.text).toBe('{"id":1}\n\n{"id":2}\r\n{"id":3}');
      expect(r.letters.map((d) => d.offset)).toEqual([10, text.indexOf('{"id":2}') + 10]);
    },
  );

  it('counts lines against the announced records (blank lines are none)', async () => {
    const text = '{"id":1}\n\n{"id":2}\n\r\n{"id":3}\n';
    expect((await checked(text, 3, 3)).text).toBe(text);
    const err = await checked(text, 3, 2).catch((e: unknown) => e);
    expect((err as LimitExceeded).limit).toBe('recordsMargin');
  });
});
