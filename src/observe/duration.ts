/** Durations in the pipeline file's `notify:`, `metrics:` and `checks:` blocks: `500ms`, `90s`, `30m`, `26h`, `2d`, `1h30m`. */
import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds; NaN when the text is not a duration (a unit is required: `30` could be seconds or minutes). */
export function parseDuration(text: string): number {
  const t = text.trim();
  const parts = [...t.matchAll(PART)];
  if (t === '' || parts.map((m) => m[0]).join('') !== t) return NaN;
  return Math.round(parts.reduce((ms, m) => ms + Number(m[1]) * UNIT_MS[m[2]!]!, 0));
}

/** A duration option, checked when the file is validated. */
export function durationOption(what: string) {
  return z
    .string()
    .refine((s) => parseDuration(s) > 0, { message: 'a duration such as "90s", "30m", "26h" or "2d"' })
    .describe(what);
}
