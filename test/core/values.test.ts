import { describe, expect, it } from 'vitest';
import { DateOnly, isDateOnly, isTimestamp, parseIsoTimestamp } from '../../src/core/values.js';

describe('DateOnly', () => {
  it('holds a real calendar date and serialises to YYYY-MM-DD', () => {
    const d = new DateOnly('2024-02-29');
    expect(d.iso).toBe('2024-02-29');
    expect(JSON.stringify({ d })).toBe('{"d":"2024-02-29"}');
    expect(String(d)).toBe('2024-02-29');
    expect(d.toDate()).toEqual(new Date('2024-02-29T00:00:00Z'));
    expect(isDateOnly(d)).toBe(true);
    expect(isDateOnly('2024-02-29')).toBe(false);
  });

  it('refuses what is not a date', () => {
    expect(() => new DateOnly('2023-02-29')).toThrow(RangeError);
    for (const s of ['2025-13-01', '2025-00-10', '2025-04-31', '25-01-01', '2025-01-01T00:00:00Z', ''])
      expect(DateOnly.parse(s), s).toBeNull();
    expect(DateOnly.parse(20250101)).toBeNull();
    expect(DateOnly.parse(' 2025-01-31 ')?.iso).toBe('2025-01-31');
  });

  it('takes the UTC day of an instant', () => {
    expect(DateOnly.fromDate(new Date('2025-01-01T23:30:00-02:00')).iso).toBe('2025-01-02');
  });
});

describe('timestamps', () => {
  it('parses ISO 8601 only; a missing offset means UTC', () => {
    expect(parseIsoTimestamp('2025-02-18T11:30:49.887Z')).toEqual(new Date('2025-02-18T11:30:49.887Z'));
    expect(parseIsoTimestamp('2024-02-29T23:59:59.999Z')).toEqual(new Date('2024-02-29T23:59:59.999Z'));
    expect(parseIsoTimestamp('2025-02-18T11:30:49')).toEqual(new Date('2025-02-18T11:30:49Z'));
    expect(parseIsoTimestamp('2025-02-18 11:30')).toEqual(new Date('2025-02-18T11:30:00Z'));
    expect(parseIsoTimestamp('2025-02-18T11:30:00+0530')).toEqual(new Date('2025-02-18T06:00:00Z'));
    expect(parseIsoTimestamp('2025-02-18T11:30:00.123456-01')).toEqual(new Date('2025-02-18T12:30:00.123Z'));
    expect(parseIsoTimestamp('2025-02-18')).toEqual(new Date('2025-02-18T00:00:00Z'));
    for (const s of [
      'December 21, 2024',
      '2025-02-30T00:00:00Z',
      '2025-02-30T00:00:00.000Z',
      '2025-02-18T24:00:00.000Z',
      '2025-02-18T25:00:00Z',
      '2025-0a-18T10:00:00.000Z',
      'now',
      '',
    ])
      expect(parseIsoTimestamp(s), s).toBeNull();
    expect(parseIsoTimestamp(1700000000000)).toBeNull();
  });

  it('isTimestamp accepts only valid Dates', () => {
    expect(isTimestamp(new Date())).toBe(true);
    expect(isTimestamp(new Date('nope'))).toBe(false);
    expect(isTimestamp('2025-01-01')).toBe(false);
  });
});
