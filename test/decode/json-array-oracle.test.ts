/**
 * The JSON-array scanner against stream-json, a general streaming JSON parser, as an independent oracle: the scanner
 * takes shortcuts for speed (byte scanning, one-element-per-line detection), stream-json takes none. On random
 * documents — nasty strings, escapes, brackets inside strings, multi-byte text, any whitespace, arrays at a path —
 * cut at random chunk boundaries, both must yield the same elements in the same order.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import pick from 'stream-json/filters/pick.js';
import parser from 'stream-json/parser.js';
import streamArray from 'stream-json/streamers/stream-array.js';
import { rng } from '../../bench/lib/company-records.js';
import { decodeAll } from './helpers.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const PIECES = [
  'a',
  'Z',
  ' ',
  '"',
  '\\',
  '/',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '\n',
  '\t',
  'é',
  '日本',
  '😀',
  '\u0000',
  '\u2028',
];

function randomString(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * 12);
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(r() * PIECES.length)];
  return s;
}

function randomValue(r: () => number, depth: number): Json {
  const k = Math.floor(r() * (depth > 3 ? 5 : 7));
  if (k === 0) return null;
  if (k === 1) return r() < 0.5;
  if (k === 2) return Math.floor(r() * 2e6) - 1e6;
  if (k === 3) return (r() - 0.5) * 1e6;
  if (k === 4) return randomString(r);
  if (k === 5) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  return randomObject(r, depth + 1);
}

function randomObject(r: () => number, depth: number): { [k: string]: Json } {
  const o: { [k: string]: Json } = {};
  const n = Math.floor(r() * 5);
  for (let i = 0; i < n; i++) o[`${randomString(r)}${i}`] = randomValue(r, depth);
  return o;
}

/** Compact, one element per line, or pretty-printed: the layouts the scanner treats differently. */
function render(value: unknown, layout: number): string {
  if (layout === 0) return JSON.stringify(value);
  if (layout === 1) return JSON.stringify(value, null, 2);
  if (Array.isArray(value)) return `[\n${value.map((v) => JSON.stringify(v)).join(',\n')}\n]`;
  return JSON.stringify(value, null, '\t');
}

/** What stream-json assembles from the same text: the array's elements, at `path` if given. */
async function oracle(text: string, path?: string): Promise<unknown[]> {
  let stream = Readable.from([Buffer.from(text)]).pipe(parser.asStream());
  if (path) stream = stream.pipe(pick.asStream({ filter: path }));
  const out: unknown[] = [];
  for await (const item of stream.pipe(streamArray.asStream()) as AsyncIterable<{ value: unknown }>)
    out.push(item.value);
  return out;
}

describe('JSON-array decoding agrees with stream-json', () => {
  it('on random top-level arrays of objects, in every layout and chunking', async () => {
    const r = rng(42);
    for (let doc = 0; doc < 60; doc++) {
      const elements = Array.from({ length: Math.floor(r() * 30) }, () => randomObject(r, 0));
      const text = render(elements, doc % 3);
      const expected = await oracle(text);
      expect(expected).toEqual(elements);
      const got = await decodeAll(text, { format: 'json', batchSize: 7 }, 'random');
      expect(got.rows, `document ${doc}`).toEqual(expected);
      expect(got.deadLetters).toEqual([]);
    }
  });

  it('on arrays at a path inside random documents', async () => {
    const r = rng(7);
    for (let doc = 0; doc < 40; doc++) {
      const items = Array.from({ length: Math.floor(r() * 20) }, () => randomObject(r, 0));
      const document = { before: randomValue(r, 0), data: { meta: randomObject(r, 1), items }, after: randomString(r) };
      const text = render(document, doc % 3);
      const expected = await oracle(text, 'data.items');
      expect(expected).toEqual(items);
      const got = await decodeAll(text, { format: 'json', path: 'data.items' }, 'random');
      expect(got.rows, `document ${doc}`).toEqual(expected);
    }
  });
});
