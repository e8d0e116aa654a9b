/** `zone_cost`'s period is checked when the pipeline loads: the service answers an impossible day with a 500. */
import { describe, expect, it } from 'vitest';
import { zoneCostSchema } from '../../src/sources/zone-cost.js';

const parse = (from: string, to: string) => zoneCostSchema.safeParse({ type: 'zone_cost', zones: ['z'], from, to });

describe('zone_cost period', () => {
  it('takes real days, from before to', () => {
    expect(parse('2026-02-01', '2026-03-01').success).toBe(true);
  });

  it.each([
    ['2026-02-30', '2026-03-01', 'from', /from "2026-02-30" is not a calendar day/],
    ['2026-02-01', '2026-02-29', 'to', /to "2026-02-29" is not a calendar day/],
    ['2026-03-02', '2026-03-01', 'from', /after to/],
  ])('refuses %s → %s, at the field', (from, to, field, message) => {
    const r = parse(from, to);
    expect(r.success).toBe(false);
    const issue = r.error!.issues[0]!;
    expect(issue.path).toEqual([field]);
    expect(issue.message).toMatch(message);
  });
});
