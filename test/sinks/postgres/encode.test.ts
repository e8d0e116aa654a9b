/**
 * COPY text encoding, column type by column type (the cases test/sinks/postgres/types.test.ts leaves out), and the
 * buffer the text is built in: its chunks are handed over without a copy, so a chunk taken must never change when
 * the next rows are written.
 */
import { describe, expect, it } from 'vitest';
import { DateOnly } from '../../../src/core/values.js';
import * as T from '../../../src/core/logical-type.js';
import { CopyBuffer, RowEncoder, UnstorableValue } from '../../../sinks/postgres/encode.js';

function encoder(...columns: [string, T.LogicalType][]): RowEncoder {
  const types = new Map(columns);
  return new RowEncoder([...types.keys()], types);
}

describe('COPY text of each column type', () => {
  it('text columns: strings escaped, other values as their text', () => {
    const enc = encoder(['s', T.VARCHAR]);
    expect(enc.line({ s: 'plain' })).toBe('plain\n');
    expect(enc.line({ s: 'tab\there\\' })).toBe('tab\\there\\\\\n');
    expect(enc.line({ s: 7 })).toBe('7\n');
    expect(enc.line({ s: false })).toBe('false\n');
    expect(enc.line({ s: { a: 'x\ny' } })).toBe('{"a":"x\\\\ny"}\n');
    expect(enc.line({ s: new Date('2024-05-06T07:08:09Z') })).toBe('2024-05-06T07:08:09.000Z\n');
  });

  it('numeric columns: numbers and bigints as they are, numeric text escaped like any text', () => {
    const enc = encoder(['n', T.BIGINT], ['d', T.DOUBLE]);
    expect(enc.line({ n: 12, d: 0.5 })).toBe('12\t0.5\n');
    expect(enc.line({ n: 12345678901234567890n, d: -1e-7 })).toBe('12345678901234567890\t-1e-7\n');
    expect(enc.line({ n: '42', d: '1\\5' })).toBe('42\t1\\\\5\n');
  });

  it('timestamptz columns: instants in ISO form, an invalid Date as null, text as it is', () => {
    const enc = encoder(['at', T.TIMESTAMP]);
    expect(enc.line({ at: new Date('2024-01-02T03:04:05.678Z') })).toBe('2024-01-02T03:04:05.678Z\n');
    expect(enc.line({ at: new Date(Number.NaN) })).toBe('\\N\n');
    expect(enc.line({ at: '2024-01-02 03:04:05+02' })).toBe('2024-01-02 03:04:05+02\n');
  });

  it('date, boolean and native columns through the general path', () => {
    const enc = encoder(['day', T.DATE], ['b', T.BOOLEAN], ['u', T.nativeType('uuid')]);
    expect(enc.line({ day: new DateOnly('2024-02-29'), b: true, u: '00000000-0000-0000-0000-000000000001' })).toBe(
      '2024-02-29\ttrue\t00000000-0000-0000-0000-000000000001\n',
    );
  });

  it('jsonb columns: JSON text with its backslashes escaped; NUL refused', () => {
    const enc = encoder(['doc', T.structOf([['a', T.VARCHAR]])], ['j', T.JSON_TYPE]);
    expect(enc.line({ doc: { a: 'q"t\\' }, j: [1, null] })).toBe('{"a":"q\\\\"t\\\\\\\\"}\t[1,null]\n');
    expect(enc.line({ doc: { a: 'x' }, j: { big: 2n ** 70n } })).toBe('{"a":"x"}\t{"big":"1180591620717411303424"}\n');
    expect(() => enc.line({ j: { s: 'a\0' } })).toThrow(UnstorableValue);
  });

  it('array columns: elements quoted, nulls as NULL, a non-array as a scalar', () => {
    const enc = encoder(['tags', T.listOf(T.VARCHAR)], ['ns', T.listOf(T.BIGINT)]);
    expect(enc.line({ tags: ['a', null, 'b,"c"', 'tab\t'], ns: [1, 2] })).toBe(
      '{"a",NULL,"b,\\\\"c\\\\"","tab\\t"}\t{"1","2"}\n',
    );
    expect(enc.line({ tags: [], ns: 'not a list' })).toBe('{}\tnot a list\n');
  });
});

describe('CopyBuffer', () => {
  it('hands each chunk over as it is: later rows never overwrite one taken', () => {
    const enc = encoder(['s', T.VARCHAR], ['n', T.BIGINT]);
    const out = new CopyBuffer(64);
    enc.write({ s: 'first', n: 1 }, out);
    const first = out.take();
    expect(out.length).toBe(0);
    enc.write({ s: 'second', n: 2 }, out);
    enc.write({ s: 'ß€😀', n: 3 }, out);
    expect(first.toString()).toBe('first\t1\n');
    expect(out.take().toString()).toBe('second\t2\nß€😀\t3\n');
  });

  it('grows for a row longer than its capacity, and starts the next chunk at its capacity again', () => {
    const enc = encoder(['s', T.VARCHAR]);
    const out = new CopyBuffer(16);
    const long = 'x'.repeat(10_000);
    enc.write({ s: 'a' }, out);
    enc.write({ s: long }, out);
    expect(out.take().toString()).toBe(`a\n${long}\n`);
    enc.write({ s: 'b' }, out);
    expect(out.take().toString()).toBe('b\n');
  });

  it('writes nothing of a row it cannot store', () => {
    const enc = encoder(['s', T.VARCHAR], ['t', T.VARCHAR]);
    const out = new CopyBuffer();
    enc.write({ s: 'kept', t: 'x' }, out);
    expect(() => enc.write({ s: 'lost', t: 'a\0b' }, out)).toThrow(UnstorableValue);
    expect(out.take().toString()).toBe('kept\tx\n');
  });
});
