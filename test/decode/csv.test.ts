import { describe, expect, it } from 'vitest';
import { companyRecord, toCsv } from '../../bench/lib/company-records.js';
import { DecodeError, SluiceError } from '../../src/core/errors.js';
import type { Row } from '../../src/core/types.js';
import { CHUNKINGS, decodeAll, decodeError, gzip } from './helpers.js';

const records = Array.from({ length: 15 }, (_, i) => companyRecord(i, 6));

/** What a record looks like after a CSV round trip: scalars as text, null stays null, nested values decoded. */
function viaCsv(rec: Row): Row {
  return Object.fromEntries(
    Object.entries(rec).map(([k, v]) => [k, v === null || typeof v === 'object' ? v : String(v)]),
  );
}

describe('csv decoder', () => {
  it.each(CHUNKINGS)('decodes the service’s CSV, plain and gzipped, in chunks of %s', async (chunking) => {
    const text = toCsv(records);
    for (const input of [text, gzip(text)]) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'csv', jsonColumns: 'auto' }, chunking);
      expect(deadLetters).toEqual([]);
      expect(rows).toEqual(records.map(viaCsv));
    }
  });

  it('reads quotes, doubled quotes, embedded line breaks, LF or CRLF line ends and a BOM', async () => {
    const text =
      '\uFEFFid,text,note\r\n' +
      '1,"a, b","say ""hi"""\r\n' +
      '2,"line one\nline two\r\nline three",plain\n' +
      '3,"東京 🚀 café",""""\n';
    for (const chunking of CHUNKINGS) {
      const { rows } = await decodeAll(text, { format: 'csv' }, chunking);
      expect(rows).toEqual([
        { id: '1', text: 'a, b', note: 'say "hi"' },
        { id: '2', text: 'line one\nline two\r\nline three', note: 'plain' },
        { id: '3', text: '東京 🚀 café', note: '"' },
      ]);
    }
  });

  it('reads an empty cell as null and a quoted empty cell as an empty string', async () => {
    const { rows } = await decodeAll('a,b,c\n,"",x\nx,,\n', { format: 'csv' });
    expect(rows).toEqual([
      { a: null, b: '', c: 'x' },
      { a: 'x', b: null, c: null },
    ]);
  });

  it('decodes JSON columns: auto takes cells that start with [ or { and parse', async () => {
    const text = 'id,tags,meta,title\n1,"[""a"",""b""]","{""k"":{""n"":1}}",[draft] not json\n2,[],{},{x\n';
    const { rows } = await decodeAll(text, { format: 'csv', jsonColumns: 'auto' });
    expect(rows).toEqual([
      { id: '1', tags: ['a', 'b'], meta: { k: { n: 1 } }, title: '[draft] not json' },
      { id: '2', tags: [], meta: {}, title: '{x' },
    ]);
    const none = await decodeAll(text, { format: 'csv' });
    expect(none.rows[0]!.tags).toBe('["a","b"]');
  });

  it('decodes listed JSON columns only, and rejects a row whose listed cell is not JSON', async () => {
    const text = 'id,score,tags\n1,"4.5","[1]"\n2,oops,[]\n3,,[2]\n';
    const { rows, deadLetters } = await decodeAll(text, { format: 'csv', jsonColumns: ['score', 'tags'] });
    expect(rows).toEqual([
      { id: '1', score: 4.5, tags: [1] },
      { id: '3', score: null, tags: [2] },
    ]);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]!.reason).toMatch(/^CSV row 2: column "score" is not valid JSON/);
    expect(deadLetters[0]!.offset).toBe(Buffer.byteLength('id,score,tags\n1,"4.5","[1]"\n'));
    expect(deadLetters[0]!.raw).toBe('2,oops,[]\n');
  });

  it('refuses listed JSON columns that the header does not have', async () => {
    const err = await decodeError('a,b\n1,2\n', { format: 'csv', jsonColumns: ['c'] });
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as Error).message).toMatch(/JSON column\(s\) c not in the CSV header \(a, b\)/);
  });

  it('dead-letters ragged rows with their byte offset and row number, and decodes the rest', async () => {
    const lines = ['name,city\n', 'Zoë,Zürich\n', 'only-one\n', 'a,b,c\n', '"x"y,z\n', 'ok,fine\n'];
    const text = lines.join('');
    for (const chunking of CHUNKINGS) {
      const { rows, deadLetters } = await decodeAll(text, { format: 'csv', unit: 'dl:1' }, chunking);
      expect(rows).toEqual([
        { name: 'Zoë', city: 'Zürich' },
        { name: 'ok', city: 'fine' },
      ]);
      const at = (k: number): number => Buffer.byteLength(lines.slice(0, k).join(''));
      expect(deadLetters.map((d) => [d.unit, d.stage, d.offset, d.reason, d.raw])).toEqual([
        ['dl:1', 'decode', at(2), 'CSV row 2: 1 fields where the header has 2', 'only-one\n'],
        ['dl:1', 'decode', at(3), 'CSV row 3: 3 fields where the header has 2', 'a,b,c\n'],
        ['dl:1', 'decode', at(4), 'CSV row 4: text after the closing quote of field "name"', '"x"y,z\n'],
      ]);
    }
  });

  it('numbers repeated and empty header names so no cell is lost', async () => {
    const { rows } = await decodeAll('a,a,,a_2\n1,2,3,4\n', { format: 'csv' });
    expect(rows).toEqual([{ a: '1', a_2: '2', column_3: '3', a_2_2: '4' }]);
  });

  it('keeps any header text as a plain key: quotes, backslashes, line breaks, code-like text, __proto__', async () => {
    const header = ['"a\\b"""', '"x\ny"', '"}; throw 1; //"', '__proto__', 'constructor'].join(',');
    const { rows } = await decodeAll(`${header}\n1,2,3,"{""p"":1}",5\n`, { format: 'csv', jsonColumns: 'auto' });
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.keys(row)).toEqual(['a\\b"', 'x\ny', '}; throw 1; //', '__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toEqual({ p: 1 });
    expect(row['}; throw 1; //']).toBe('3');
    expect(row.constructor).toBe('5');
  });

  it('takes a complete last row without a line end, and skips blank lines', async () => {
    const { rows } = await decodeAll('a,b\n\n1,2\r\n\r\n3,4', { format: 'csv' }, 1);
    expect(rows).toEqual([
      { a: '1', b: '2' },
      { a: '3', b: '4' },
    ]);
  });

  it('fails on input cut inside a quoted field or inside the last row, naming the row start', async () => {
    const head = 'id,text\n1,ok\n';
    for (const cut of [head + '2,"unfinished quote', head + '2']) {
      for (const input of [cut, gzip(cut)]) {
        const err = await decodeError(input, { format: 'csv', unit: 'dl:2' }, 3);
        expect(err).toBeInstanceOf(DecodeError);
        expect((err as DecodeError).unit).toBe('dl:2');
        expect((err as DecodeError).message).toMatch(/^dl:2: truncated input/);
      }
    }
    const quoted = await decodeError(head + '2,"unfinished', { format: 'csv' });
    expect((quoted as DecodeError).offset).toBe(head.length + 2);
    const short = await decodeError(head + '2', { format: 'csv' });
    expect((short as DecodeError).offset).toBe(head.length);
  });

  it('reads a header-only file or an empty body as zero records', async () => {
    for (const input of ['', 'a,b\n', 'a,b', '\uFEFF'])
      expect((await decodeAll(input, { format: 'csv' })).batches).toEqual([]);
  });

  it('respects the batch size exactly', async () => {
    const { batches } = await decodeAll(toCsv(records), { format: 'csv', batchSize: 4, jsonColumns: 'auto' }, 'random');
    expect(batches.map((b) => b.length)).toEqual([4, 4, 4, 3]);
  });
});
