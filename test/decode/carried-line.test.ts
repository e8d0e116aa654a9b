/** The line both line readers carry across chunks: kept while under the record size limit, counted once over it. */
import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../src/core/types.js';
import { CarriedLine, lastByte, piecesLength } from '../../src/decode/carried-line.js';
import type { DecodeContext } from '../../src/decode/context.js';

function carried(maxRecordBytes: number, copy = false): { line: CarriedLine; letters: DeadLetter[] } {
  const letters: DeadLetter[] = [];
  const ctx: DecodeContext = {
    unit: 'unit:test',
    deadLetter: (d) => letters.push(d),
    batchSize: 100,
    batchBytes: Infinity,
    maxRecordBytes,
  };
  return { line: new CarriedLine(ctx, copy), letters };
}

describe('CarriedLine', () => {
  it('hands back the pieces of a line that spans chunks, from where it started', () => {
    const { line, letters } = carried(100);
    expect(line.open).toBe(false);
    line.hold(Buffer.from('xx{"a":'), 2, 10);
    line.hold(Buffer.from('1,'), 0, 17);
    expect(line.open).toBe(true);
    const earlier = line.close(3)!;
    expect(Buffer.concat(earlier).toString()).toBe('{"a":1,');
    expect(piecesLength(earlier)).toBe(7);
    expect(lastByte(earlier)).toBe(','.charCodeAt(0));
    expect(line.offset).toBe(10);
    expect(line.open).toBe(false);
    expect(letters).toEqual([]);
  });

  it('dead-letters a line over the limit by its length, whether its end comes later or never', () => {
    const { line, letters } = carried(8);
    line.hold(Buffer.from('0123456789'), 0, 0);
    line.hold(Buffer.from('abcdef'), 0, 10);
    expect(line.close(4)).toBeUndefined();
    expect(letters[0]).toMatchObject({ offset: 0, stage: 'decode' });
    expect(letters[0]!.reason).toMatch(/^line \(20 B\) is over the record size limit/);

    line.hold(Buffer.from('0123456789'), 0, 30);
    expect(line.end()).toBeUndefined();
    expect(letters[1]!.reason).toMatch(/or more: the input ends inside it/);
  });

  it('judges the whole line at its end: under the limit in pieces, over it with its last bytes', () => {
    const { line, letters } = carried(8);
    line.hold(Buffer.from('0123'), 0, 0);
    expect(line.close(5)).toBeUndefined();
    expect(letters).toHaveLength(1);
    line.hold(Buffer.from('0123'), 0, 0);
    expect(line.close(4)).toHaveLength(1);
  });

  it('keeps copies when asked, so a reused chunk buffer cannot change a carried line', () => {
    const chunk = Buffer.from('abc');
    const { line } = carried(100, true);
    line.hold(chunk, 0, 0);
    chunk.write('zzz');
    expect(Buffer.concat(line.end()!).toString()).toBe('abc');
  });
});
