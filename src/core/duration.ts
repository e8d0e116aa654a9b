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

/**
 * `0.25 s`, `4.2 s`, `25 s`, `3 min 5 s`, `10 min`, `2 h 5 min`: a duration for people — messages, summaries, the
 * runs table, the report's charts. One form everywhere, so a figure reads the same wherever it is quoted; under a
 * second still in seconds, because the limits it quotes are written in seconds (`call_timeout_s: 0.5`).
 */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Number((ms / 1000).toFixed(3))} s`;
  const s = ms / 1000;
  if (s < 59.5) return `${Number(s.toFixed(s < 10 ? 1 : 0))} s`;
  const seconds = Math.round(s);
  if (seconds < 3600) {
    const rest = seconds % 60;
    return `${Math.floor(seconds / 60)} min${rest ? ` ${rest} s` : ''}`;
  }
  const minutes = Math.round(s / 60);
  const rest = minutes % 60;
  return `${Math.floor(minutes / 60)} h${rest ? ` ${rest} min` : ''}`;
}
