/**
 * Durations as users write them — in the pipeline file (`notify:`, `metrics:`, `checks:`, `resume.stale_after`) and on
 * the command line (`--wait=10m`): `500ms`, `90s`, `30m`, `26h`, `2d`, `1h30m`. One grammar everywhere.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds; NaN when the text is not a duration (a unit is required: `30` could be seconds or minutes). */
export function parseDuration(text: string): number {
  const t = String(text).trim();
  const parts = [...t.matchAll(PART)];
  if (t === '' || parts.map((m) => m[0]).join('') !== t) return NaN;
  return Math.round(parts.reduce((ms, m) => ms + Number(m[1]) * UNIT_MS[m[2]!]!, 0));
}
