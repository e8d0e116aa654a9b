import { describe, expect, it } from 'vitest';
import { BadJsonlLine, parseObjectLine } from '../../../src/sink-kit/raw-jsonl/line.js';

const parse = (line: string, offset = 0) => {
  const buf = Buffer.from(`xx${line}yy`);
  return parseObjectLine(buf, 2, buf.length - 2, offset);
};

describe('parseObjectLine', () => {
  it('parses the object between start and end; a blank line is undefined', () => {
    expect(parse('{"a":[1,{"b":null}]}')).toEqual({ a: [1, { b: null }] });
    expect(parse('')).toBeUndefined();
    expect(parse('  \r')).toBeUndefined();
  });

  it('refuses a line that is not JSON, or JSON that is not one object, naming its byte offset', () => {
    for (const [line, message] of [
      ['{"a":', /not JSON at byte 120/],
      ['[1,2]', /line at byte 120 is not a JSON object/],
      ['"text"', /line at byte 120 is not a JSON object/],
      ['null', /line at byte 120 is not a JSON object/],
    ] as const) {
      let err: unknown;
      try {
        parse(line, 120);
      } catch (e) {
        err = e;
      }
      expect(err, line).toBeInstanceOf(BadJsonlLine);
      expect(err, line).toMatchObject({ offset: 120, message: expect.stringMatching(message) });
    }
  });
});
