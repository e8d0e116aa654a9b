import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stageRawJsonl } from '../../../sinks/duckdb/stage.js';
import { copyCheckedJsonl } from '../../../src/sink-kit/raw-jsonl/checked-copy.js';
import { BadJsonlLine } from '../../../src/sink-kit/raw-jsonl/line.js';
import { JsonlLines } from '../../../src/sink-kit/raw-jsonl/lines.js';
import { removeTempDirs, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

/** Feeds `chunks` and collects the lines as `[text, offset]`; `unterminated` from `end()`. */
function split(chunks: string[], max = Infinity): { lines: [string, number][]; unterminated: boolean } {
  const lines: [string, number][] = [];
  const reader = new JsonlLines(max, (buf, start, end, offset) =>
    lines.push([buf.toString('utf8', start, end), offset]),
  );
  for (const c of chunks) reader.push(Buffer.from(c));
  return { lines, unterminated: reader.end() };
}

describe('JsonlLines', () => {
  it('hands over each line with its offset, lines across chunks joined, the last one without its newline', () => {
    expect(split(['{"a":1}\n{"b":', '2', '}\n\n{"c"', ':3}'])).toEqual({
      lines: [
        ['{"a":1}', 0],
        ['{"b":2}', 8],
        ['', 16],
        ['{"c":3}', 17],
      ],
      unterminated: true,
    });
    expect(split(['{"a":1}\n', '{"b":2}\n']).unterminated).toBe(false);
  });

  it('refuses a line over the limit as soon as it would pass it, before its end ever comes', () => {
    const lines: number[] = [];
    const reader = new JsonlLines(10, (_b, _s, _e, offset) => lines.push(offset));
    reader.push(Buffer.from('{"a":1}\n{"b":"'));
    // An endless line of 6 bytes so far: a second 3-byte chunk would take it to 12 bytes, over the limit of 10.
    const chunk = Buffer.from('xxx');
    let err: unknown;
    let pushed = 0;
    try {
      for (; pushed < 1000; pushed++) reader.push(chunk);
    } catch (e) {
      err = e;
    }
    expect(pushed).toBe(1);
    expect(err).toBeInstanceOf(BadJsonlLine);
    expect(err).toMatchObject({
      offset: 8,
      message: 'the line at byte 8 is over the record size limit of 10 B (limits.max_record_bytes): not read further',
    });
    expect(lines).toEqual([0]);
  });

  it('refuses a line over the limit that lies inside one chunk, and one that the input ends inside', () => {
    expect(() => split(['{"a":1}\n{"b":"0123456789"}\n'], 10)).toThrow(/line at byte 8 is over/);
    expect(() => split(['{"a":1}\n{"b":"01', '23456789"}'], 10)).toThrow(/line at byte 8 is over/);
    expect(split(['{"a":1}\n{"b":"0', '"}\n'], 10).lines).toEqual([
      ['{"a":1}', 0],
      ['{"b":"0"}', 8],
    ]);
  });
});

describe('the native paths refuse a line over the record size limit, whole and valid as it may be', () => {
  const big = `{"id":2,"pad":"${'x'.repeat(2000)}"}`;
  const text = `{"id":1}\n${big}\n{"id":3}\n`;

  it("the jsonl sink's copy", async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'in.jsonl');
    await writeFile(src, text);
    const copy = (maxLineBytes: number): Promise<unknown> =>
      copyCheckedJsonl(src, path.join(dir, 'out.jsonl'), undefined, { maxLineBytes }).catch((e: unknown) => e);
    expect(await copy(big.length)).toMatchObject({ records: 3 });
    expect(await copy(1024)).toMatchObject({
      offset: 9,
      message: 'the line at byte 9 is over the record size limit of 1 KiB (limits.max_record_bytes): not read further',
    });
  });

  it("DuckDB's staging scan", async () => {
    const dir = await tempDir();
    const src = path.join(dir, 'in.jsonl');
    await writeFile(src, text);
    const stage = (max: number): Promise<unknown> =>
      stageRawJsonl(src, path.join(dir, 'stage.json'), undefined, max).catch((e: unknown) => e);
    expect(await stage(big.length)).toMatchObject({ rows: 3, longestLine: big.length });
    const err = await stage(1024);
    expect(err).toBeInstanceOf(BadJsonlLine);
    expect(err).toMatchObject({ offset: 9 });
  });
});
