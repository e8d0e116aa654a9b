import { describe, expect, it } from 'vitest';
import { parseRelativeTime } from '../../../src/transforms/presets/relative-time.js';

const NOW = new Date('2025-03-31T08:30:00.000Z');
const at = (text: string) => parseRelativeTime(text, NOW).at?.toISOString() ?? null;

describe('parseRelativeTime', () => {
  it.each([
    ['just now', '2025-03-31T08:30:00.000Z'],
    ['a moment ago', '2025-03-31T08:30:00.000Z'],
    ['30 seconds ago', '2025-03-31T08:29:30.000Z'],
    ['a minute ago', '2025-03-31T08:29:00.000Z'],
    ['5 minutes ago', '2025-03-31T08:25:00.000Z'],
    ['an hour ago', '2025-03-31T07:30:00.000Z'],
    ['3 hours ago', '2025-03-31T05:30:00.000Z'],
    ['yesterday', '2025-03-30T08:30:00.000Z'],
    ['4 days ago', '2025-03-27T08:30:00.000Z'],
    ['a week ago', '2025-03-24T08:30:00.000Z'],
    ['3 weeks ago', '2025-03-10T08:30:00.000Z'],
    // Calendar months: a month before 31 March is the end of February, not 3 March.
    ['a month ago', '2025-02-28T08:30:00.000Z'],
    ['2 months ago', '2025-01-31T08:30:00.000Z'],
    ['a year ago', '2024-03-31T08:30:00.000Z'],
    ['2 years ago', '2023-03-31T08:30:00.000Z'],
    ['A Week Ago', '2025-03-24T08:30:00.000Z'],
    ['a week ago on Google', '2025-03-24T08:30:00.000Z'],
  ])('%s', (text, iso) => {
    expect(at(text)).toBe(iso);
  });

  it('flags Edited and still resolves the time', () => {
    expect(parseRelativeTime('Edited 2 years ago', NOW)).toEqual({
      at: new Date('2023-03-31T08:30:00.000Z'),
      edited: true,
    });
    expect(parseRelativeTime('Edited a month ago', NOW).edited).toBe(true);
  });

  it('unknown forms give null without throwing', () => {
    for (const t of ['', 'il y a 2 mois', 'soon', '3 fortnights ago', 'ago', '2025-01-01'])
      expect(parseRelativeTime(t, NOW)).toEqual({ at: null, edited: false });
    expect(parseRelativeTime(undefined, NOW)).toEqual({ at: null, edited: false });
    expect(parseRelativeTime('Edited whenever', NOW)).toEqual({ at: null, edited: true });
  });
});
