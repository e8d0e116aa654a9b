import { describe, expect, it } from 'vitest';
import { companyRecord, toJsonl } from '../../bench/lib/company-records.js';
import { DecodeError } from '../../src/core/errors.js';
import { CHUNKINGS, decodeAll, decodeError, gzip } from './helpers.js';

const records = Array.from({ length: 25 }, (_, i) => companyRecord(i, 3));
const text = toJsonl(records);

describe('jsonl decoder', () => {
  it.each(CHUNKINGS)('decodes every record, plain and gzipped, in chunks of %s', async (chunking) => {
    for (const input of [text, gzip(text)]) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'jsonl' }, chunking);
      expect(deadLetters).toEqual([]);
      expect(rows).toEqual(records);
    }
  });

  it('keeps multi-byte characters whole when every chunk boundary splits them', async () => {
    const rec = { s: 'é—東京🚀’', t: 'a\u2028b' };
    const input = Buffer.from(JSON.stringify(rec) + '\n' + JSON.stringify(rec) + '\n');
    for (const chunking of [1, 2, 3, 5] as const) {
      const { rows } = await decodeAll(input, { format: 'jsonl' }, chunking);
      expect(rows).toEqual([rec, rec]);
    }
  });

  it('accepts CRLF line ends, blank lines, whitespace-only lines and a leading BOM', async () => {
    const input = '\uFEFF{"a":1}\r\n\r\n   \n{"a":2}\r\n\n';
    for (const chunking of CHUNKINGS) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'jsonl' }, chunking);
      expect(deadLetters).toEqual([]);
      expect(rows).toEqual([{ a: 1 }, { a: 2 }]);
    }
  });

  it('dead-letters a malformed line with its byte offset and decodes the rest', async () => {
    const first = '{"name":"Zürich café"}\n'; // multi-byte: offsets must count bytes, not characters
    const bad = '{"name": "cut\n';
    const input = first + bad + '[1,2]\n"text"\n{"ok":true}\n';
    for (const chunking of CHUNKINGS) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'jsonl', unit: 'snap:1' }, chunking);
      expect(rows).toEqual([{ name: 'Zürich café' }, { ok: true }]);
      const firstBytes = Buffer.byteLength(first);
      expect(deadLetters.map((d) => [d.unit, d.stage, d.offset, d.raw])).toEqual([
        ['snap:1', 'decode', firstBytes, '{"name": "cut'],
        ['snap:1', 'decode', firstBytes + Buffer.byteLength(bad), '[1,2]'],
        ['snap:1', 'decode', firstBytes + Buffer.byteLength(bad) + 6, '"text"'],
      ]);
      expect(deadLetters[0]!.reason).toMatch(/not valid JSON/);
      expect(deadLetters[1]!.reason).toMatch(/an array, not a JSON object/);
      expect(deadLetters[2]!.reason).toMatch(/a string, not a JSON object/);
    }
  });

  it('takes a last line without a newline when it parses', async () => {
    const { rows } = await decodeAll('{"a":1}\n{"a":2}', { format: 'jsonl' }, 3);
    expect(rows).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('fails on a cut last line (no newline, does not parse) naming unit and offset', async () => {
    const whole = toJsonl(records.slice(0, 3));
    const cutAt = whole.length - 40;
    for (const input of [whole.slice(0, cutAt), gzip(whole.slice(0, cutAt))]) {
      const err = await decodeError(input, { format: 'jsonl', unit: 'snap:x:part:2' }, 7);
      expect(err).toBeInstanceOf(DecodeError);
      const lastLineStart = Buffer.byteLength(toJsonl(records.slice(0, 2)));
      expect((err as DecodeError).unit).toBe('snap:x:part:2');
      expect((err as DecodeError).offset).toBe(lastLineStart);
      expect((err as DecodeError).message).toMatch(/^snap:x:part:2: truncated input.*at byte \d+$/);
    }
  });

  it('respects the batch size exactly', async () => {
    const { batches } = await decodeAll(text, { format: 'jsonl', batchSize: 4 }, 'random');
    expect(batches.map((b) => b.length)).toEqual([4, 4, 4, 4, 4, 4, 1]);
  });

  it('decodes an empty input, or one holding only line ends, to zero records', async () => {
    for (const input of ['', '\n', '\r\n\r\n']) {
      const { batches } = await decodeAll(input, { format: 'jsonl' });
      expect(batches).toEqual([]);
    }
    expect((await decodeAll(gzip(''), { format: 'jsonl' })).batches).toEqual([]);
  });
});
