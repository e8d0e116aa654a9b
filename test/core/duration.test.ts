import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/core/duration.js';

describe('durations', () => {
  it('are read in one grammar, a unit required', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('30')).toBeNaN();
    expect(parseDuration('10 m')).toBeNaN();
  });

  it('are written in seconds under a minute, as the limits that quote them are', () => {
    expect(formatDuration(100)).toBe('0.1 s');
    expect(formatDuration(500)).toBe('0.5 s');
    expect(formatDuration(4_240)).toBe('4.2 s');
    expect(formatDuration(25_000)).toBe('25 s');
    expect(formatDuration(185_000)).toBe('3 min 5 s');
    expect(formatDuration(600_000)).toBe('10 min');
    expect(formatDuration(7_500_000)).toBe('2 h 5 min');
  });
});
