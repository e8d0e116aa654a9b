import { describe, expect, it } from 'vitest';
import { companyRecord } from '../../bench/lib/company-records.js';
import { DecodeError, SluiceError } from '../../src/core/errors.js';
import { CHUNKINGS, decodeAll, decodeError, gzip } from './helpers.js';

const records = Array.from({ length: 20 }, (_, i) => companyRecord(i, 4));
/** Nasty strings for a byte scanner: brackets, escaped quotes, backslash runs, multi-byte text, a key with escapes. */
const tricky = [
  { s: 'a ] b } c [ d { e , f', q: 'say "hi"\\', bs: '\\\\', u: '東京🚀 “quoted”', 'k\\"ey': '\\"', n: [[], {}] },
  { empty: '', nested: { deeper: [{ x: '"]}' }] }, nul: null, num: -1.5e3, t: true },
];

/** One element per line, as the emulator (and many exporters) write arrays. */
function lines(elements: unknown[]): string {
  return '[\n' + elements.map((e) => JSON.stringify(e)).join(',\n') + '\n]\n';
}

describe('json array decoder', () => {
  it.each(CHUNKINGS)('streams a top-level array, plain and gzipped, in chunks of %s', async (chunking) => {
    const text = JSON.stringify([...records, ...tricky]);
    for (const input of [text, gzip(text)]) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'json' }, chunking);
      expect(deadLetters).toEqual([]);
      expect(rows).toEqual([...records, ...tricky]);
    }
  });

  it.each(CHUNKINGS)('reads arrays written one element per line, in chunks of %s', async (chunking) => {
    const text = lines([...records, ...tricky]);
    for (const input of [text, gzip(text), text.replaceAll('\n', '\r\n')]) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'json' }, chunking);
      expect(deadLetters).toEqual([]);
      expect(rows).toEqual([...records, ...tricky]);
    }
  });

  it('reads a line-per-element array with bad lines, a closing bracket on the last line and a trailing comma', async () => {
    const input = '[\n{"a":1},\n"text",\n[1] ,\n{"a": tru},\n{"a":2},\n{"a":3}],';
    const fixed = input.slice(0, -1); // without the stray byte after the array
    const { rows, deadLetters } = await decodeAll(fixed, { format: 'json' });
    expect(rows).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
    expect(deadLetters.map((d) => [d.offset, d.raw])).toEqual([
      [fixed.indexOf('"text"'), '"text"'],
      [fixed.indexOf('[1]'), '[1]'],
      [fixed.indexOf('{"a": tru}'), '{"a": tru}'],
    ]);
    const trailing = await decodeAll('[\n{"a":1},\n{"a":2},\n]', { format: 'json' });
    expect(trailing.rows).toEqual([{ a: 1 }, { a: 2 }]);
    expect(trailing.deadLetters.map((d) => d.reason)).toEqual(['empty array element (a stray comma)']);
    const twoOnALine = await decodeAll('[\n{"a":1},{"a":2},\n{"a":3}\n]', { format: 'json' });
    expect(twoOnALine.rows).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
  });

  it('handles pretty-printed arrays and a leading BOM', async () => {
    const text = '\uFEFF' + JSON.stringify(tricky, null, 2) + '\n';
    for (const chunking of CHUNKINGS)
      expect((await decodeAll(text, { format: 'json' }, chunking)).rows).toEqual(tricky);
  });

  it('reads the array at a path, skipping everything around it', async () => {
    const page = {
      general: { query: 'x ] } "', results_cnt: 3 },
      html: '<div class="a">[{not json}]</div>'.repeat(50),
      organic: [{ rank: 1 }, { rank: 2 }],
      reviews: tricky,
      after: { more: [1, 2, { reviews: [{ wrong: true }] }] },
    };
    const text = JSON.stringify(page);
    for (const chunking of CHUNKINGS) {
      expect((await decodeAll(text, { format: 'json', path: 'reviews' }, chunking)).rows).toEqual(tricky);
      expect((await decodeAll(gzip(text), { format: 'json', path: 'organic' }, chunking)).rows).toEqual(page.organic);
    }
  });

  it('follows a nested path and takes the first match only', async () => {
    const doc = { meta: { items: [{ no: 1 }] }, data: { count: 2, items: [{ a: 1 }, { a: 2 }], items2: [] } };
    const text = JSON.stringify(doc);
    for (const chunking of CHUNKINGS)
      expect((await decodeAll(text, { format: 'json', path: 'data.items' }, chunking)).rows).toEqual([
        { a: 1 },
        { a: 2 },
      ]);
  });

  it('reads a null at the path as zero records', async () => {
    expect((await decodeAll('{"organic":null,"x":1}', { format: 'json', path: 'organic' })).rows).toEqual([]);
  });

  it('explains a missing path with the keys that are there', async () => {
    const err = await decodeError('{"general":{},"organic":[]}', { format: 'json', path: 'reviews', unit: 'serp:q' });
    expect(err).toBeInstanceOf(SluiceError);
    expect(err).not.toBeInstanceOf(DecodeError); // not transient: reading again will not help
    expect((err as Error).message).toBe(
      'serp:q: path `reviews` not found in the JSON document (the document has no `reviews`; its keys: general, organic)',
    );
    const nested = await decodeError('{"data":{"count":1,"list":[]}}', { format: 'json', path: 'data.items' });
    expect((nested as Error).message).toMatch(/`data` has no `items`; its keys: count, list/);
  });

  it('rejects a path through a non-object and a path to a non-array', async () => {
    const through = await decodeError('{"data":[{"items":[]}]}', { format: 'json', path: 'data.items' });
    expect((through as Error).message).toMatch(/path `data.items` not found: `data` is an array, not an object/);
    const scalar = await decodeError('{"reviews":"none"}', { format: 'json', path: 'reviews' });
    expect((scalar as Error).message).toMatch(/`reviews` is a string, not an array of records/);
  });

  it('refuses a top-level object without a path, saying how to fix it', async () => {
    const err = await decodeError('{"data":[{"a":1}]}', { format: 'json' });
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as Error).message).toMatch(/the JSON document is an object, not an array of records/);
    expect((err as SluiceError).hint).toMatch(/path/);
  });

  it('dead-letters malformed and non-object elements with byte offsets, and decodes the rest', async () => {
    const head = '[{"city":"Zürich"},';
    const input = head + '{"a": tru},  42, "x", [1], null, {"ok":1}, , {"ok":2},]';
    for (const chunking of CHUNKINGS) {
      const { rows, deadLetters } = await decodeAll(input, { format: 'json', unit: 'u1' }, chunking);
      expect(rows).toEqual([{ city: 'Zürich' }, { ok: 1 }, { ok: 2 }]);
      const at = (s: string): number => Buffer.byteLength(input.slice(0, input.indexOf(s)));
      expect(deadLetters.map((d) => [d.offset, d.raw])).toEqual([
        [at('{"a": tru}'), '{"a": tru}'],
        [at('42'), '42'],
        [at('"x"'), '"x"'],
        [at('[1]'), '[1]'],
        [at('null'), 'null'],
        [at(', , ') + 2, ''],
        [Buffer.byteLength(input) - 1, ''],
      ]);
      expect(deadLetters.map((d) => d.reason)).toEqual([
        expect.stringMatching(/not valid JSON/),
        'array element is a number, not a JSON object',
        'array element is a string, not a JSON object',
        'array element is an array, not a JSON object',
        'array element is null, not a JSON object',
        'empty array element (a stray comma)',
        'empty array element (a stray comma)',
      ]);
    }
  });

  it('fails on an array cut inside an element, naming the element start', async () => {
    const text = JSON.stringify(records.slice(0, 4));
    const cut = text.length - 100;
    // "[" + three elements and their commas: the 4th element starts right after.
    const lastStart = Buffer.byteLength(JSON.stringify(records.slice(0, 3)));
    for (const input of [text.slice(0, cut), gzip(text.slice(0, cut))]) {
      const err = await decodeError(input, { format: 'json', unit: 'snap:a:part:1' }, 7);
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as DecodeError).offset).toBe(lastStart);
      expect((err as DecodeError).message).toMatch(
        /^snap:a:part:1: truncated input: the JSON array ends inside an element/,
      );
    }
  });

  it('fails on an array cut between elements and on a document cut after its array', async () => {
    const between = await decodeError('[{"a":1},', { format: 'json' });
    expect(between).toBeInstanceOf(DecodeError);
    expect((between as DecodeError).offset).toBe(9);
    const after = await decodeError('{"reviews":[{"a":1}],"html":"<p>cut', { format: 'json', path: 'reviews' });
    expect(after).toBeInstanceOf(DecodeError);
    expect((after as Error).message).toMatch(/JSON document is not complete/);
  });

  it('fails on content after the document and on input that is not JSON', async () => {
    expect(await decodeError('[{"a":1}] [', { format: 'json' })).toBeInstanceOf(DecodeError);
    const html = await decodeError('<html>busy</html>', { format: 'json' });
    expect(html).toBeInstanceOf(DecodeError);
    expect((html as DecodeError).offset).toBe(0);
  });

  it('yields nothing for an empty array, an empty document or an empty body', async () => {
    for (const input of ['[]', ' [ \n ] ', '', '  \n', '{"reviews":[]}'])
      expect(
        (await decodeAll(input, { format: 'json', path: input.includes('reviews') ? 'reviews' : undefined })).batches,
      ).toEqual([]);
  });

  it('respects the batch size exactly', async () => {
    const { batches } = await decodeAll(JSON.stringify(records), { format: 'json', batchSize: 6 }, 'random');
    expect(batches.map((b) => b.length)).toEqual([6, 6, 6, 2]);
  });
});
