import { describe, expect, it } from 'vitest';
import { NativeLoadRefused } from '../../../src/core/errors.js';
import { BadJsonlLine } from '../../../src/sink-kit/raw-jsonl/line.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../../../src/sink-kit/raw-jsonl/refusal.js';

describe('asNativeRefusal', () => {
  it('turns a bad line and broken gzip into NativeLoadRefused, keeping the cause', () => {
    const line = new BadJsonlLine(8, 'line at byte 8 is not a JSON object');
    const refused = asNativeRefusal('x sink', line);
    expect(refused).toBeInstanceOf(NativeLoadRefused);
    expect(refused).toMatchObject({ sink: 'x sink', reason: line.message, cause: line });
    const gzip = Object.assign(new Error('unexpected end of file'), { code: 'Z_BUF_ERROR' });
    expect(asNativeRefusal('x sink', gzip)).toBeInstanceOf(NativeLoadRefused);
  });

  it('hands every other failure back as it is', () => {
    for (const err of [
      Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }),
      Object.assign(new Error('permission denied'), { code: 'EACCES' }),
      new Error('Could not set lock on file'),
      'a string',
    ])
      expect(asNativeRefusal('x sink', err)).toBe(err);
  });
});

describe('refuseUnlessJsonl', () => {
  it('refuses files whose decode options say another format', () => {
    for (const format of ['csv', 'json'] as const)
      expect(() => refuseUnlessJsonl('x sink', { path: 'f', decode: { format }, temporary: false })).toThrow(
        NativeLoadRefused,
      );
    expect(() =>
      refuseUnlessJsonl('x sink', { path: 'f', decode: { format: 'jsonl' }, temporary: false }),
    ).not.toThrow();
  });
});
