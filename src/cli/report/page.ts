/**
 * The report as one HTML page that needs nothing else: inline CSS, inline SVG, no script, no external address (a
 * Content-Security-Policy forbids loading anything, so even text that slipped through escaping could not run).
 * Everything that comes from the history or the pipeline passes through `esc`.
 */
import { charts, durationMs, num, paidCalls, recordsCharged, type RunPoint, type StateChangeMark } from './series.js';
import { BACKFILL_COLOR, CHANGE_COLOR, esc, formatValue, renderChart, seriesColor, STATUS_COLORS } from './svg.js';
import { formatDuration } from '../../core/duration.js';

export interface CursorInfo {
  source: string;
  incremental: boolean;
  /** Units whose checkpoint every sink committed. */
  units?: number;
  newest?: { unit: string; run: string; checkpoint: unknown };
  /** A cursor that is one value: its field, and where the next run starts (a value set by hand included). */
  field?: string;
  cursor?: string | number;
  /** Changes made by hand (`sluice state set/reset`) that the runs apply to what the sinks committed. */
  changes?: number;
  /** Why the cursor could not be read (a run holds the lock…). */
  note?: string;
}

export interface OutputInfo {
  /** `sink.describe()`. */
  sink: string;
  rows?: number;
  /** Why there is no row count. */
  note?: string;
}

export interface ReportInput {
  pipeline: string;
  file: string;
  generatedAt: Date;
  /** The attempts charted, oldest first. */
  points: RunPoint[];
  /** Attempts in the whole history (more than `points` when the report shows the newest only). */
  total: number;
  /** Changes made by hand (`sluice state set/reset/drop`), oldest first. */
  changes?: StateChangeMark[];
  cursor?: CursorInfo;
  outputs: OutputInfo[];
}

const CSS = `
:root { color-scheme: light; --ink:#1d2430; --muted:#5d6877; --line:#dde2e8; --bg:#f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink); background: var(--bg); }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 40px; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 15px; margin: 0 0 4px; }
.sub { color: var(--muted); margin: 0 0 16px; }
.tiles { display: grid; grid-template-columns: repeat(6, 1fr); gap: 10px; margin-bottom: 16px; }
.tile { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.tile .k { color: var(--muted); font-size: 12px; }
.tile .v { font-size: 20px; font-weight: 600; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin-bottom: 14px; min-width: 0; }
.about { color: var(--muted); font-size: 12px; margin: 0 0 4px; }
.legend { font-size: 12px; color: var(--muted); margin: 0 0 2px; }
.legend span { margin-right: 12px; white-space: nowrap; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
svg.chart { width: 100%; height: auto; display: block; }
svg .grid { stroke: #edf0f3; }
svg .axis { stroke: #9aa4b1; }
svg .tick, svg .xlabel { font-size: 10.5px; fill: #6b7684; }
svg .mark { font-size: 11px; font-weight: 700; }
svg .gap line { stroke: #9aa4b1; stroke-width: 1.5; stroke-dasharray: 2 1; }
svg .line { stroke-linejoin: round; }
svg .cut { font-size: 10.5px; font-weight: 600; fill: #1d2430; }
svg .cut-mark { stroke: #fff; stroke-width: 3; fill: none; }
svg .change-label { font-size: 10px; font-weight: 600; }
svg .mark, svg .change-label { paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
tr.change-row td.about { white-space: normal; overflow-wrap: anywhere; }
svg .empty { fill: #8a94a3; font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td { white-space: nowrap; }
tr.detail td { white-space: normal; overflow-wrap: anywhere; padding-top: 0; font-size: 12px; }
tr:has(+ tr.detail) td { border-bottom: none; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.reasons { color: var(--muted); }
.status-pill { display: inline-block; padding: 0 7px; border-radius: 9px; color: #fff; font-size: 11.5px; }
.cause { color: #8f1d1d; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12px; word-break: break-all; }
.gapv { color: #9aa4b1; }
`;

const pill = (status: RunPoint['status']): string =>
  `<span class="status-pill" style="background:${STATUS_COLORS[status]}">${esc(status)}</span>`;

const cell = (v: number | undefined, unit: 'count' | 'ms' = 'count'): string =>
  v === undefined ? '<td class="n gapv">–</td>' : `<td class="n">${esc(formatValue(v, unit))}</td>`;

function tiles(input: ReportInput): string {
  const { points } = input;
  const last = points[points.length - 1];
  const ok = points.filter((p) => p.status === 'succeeded').length;
  const sum = (f: (p: RunPoint) => number | undefined): number => points.reduce((n, p) => n + (f(p) ?? 0), 0);
  const lastDuration = last ? durationMs(last) : undefined;
  const items: [string, string][] = [
    ['last run', last ? pill(last.status) : '–'],
    [
      'last run: records',
      last && num(last.raw.records) !== undefined ? esc(formatValue(num(last.raw.records)!, 'count')) : '–',
    ],
    ['last run: took', lastDuration !== undefined ? esc(formatDuration(lastDuration)) : '–'],
    ['attempts succeeded', `${ok} / ${points.length}`],
    ['records (charted runs)', esc(sum((p) => num(p.raw.records)).toLocaleString('en-US'))],
    ['dead letters (charted runs)', esc(sum((p) => num(p.raw.deadLetters)).toLocaleString('en-US'))],
  ];
  return `<section class="tiles">${items.map(([k, v]) => `<div class="tile"><div class="k">${esc(k)}</div><div class="v">${v}</div></div>`).join('')}</section>`;
}

function cursorCard(c: CursorInfo | undefined): string {
  if (!c) return '';
  let body: string;
  if (c.note !== undefined) body = `<p class="about">${esc(c.note)}</p>`;
  else if (!c.incremental) body = `<p>The ${esc(c.source)} source keeps no cursor: every run loads everything.</p>`;
  else if (c.field !== undefined && c.cursor !== undefined)
    body =
      `<p>The next run loads records with <code data-cursor="${esc(JSON.stringify(c.cursor))}">${esc(c.field)} &gt; ${esc(JSON.stringify(c.cursor))}</code>, as <code>sluice state</code> says.</p>` +
      (c.changes ? `<p class="about">${c.changes} change(s) made by hand (state set / reset) apply.</p>` : '');
  else if (!c.newest) body = `<p>No unit committed by every sink yet: the next run starts from the initial cursor.</p>`;
  else
    body =
      `<p>${c.units ?? 0} unit(s) committed by every sink; the next run starts after them. Newest: ` +
      `<code>${esc(c.newest.unit)}</code> (run <code>${esc(c.newest.run || '-')}</code>)</p>` +
      `<p class="mono">${esc(JSON.stringify(c.newest.checkpoint) ?? 'undefined')}</p>`;
  return `<section class="card"><h2>Cursor (${esc(c.source)} source)</h2>${body}</section>`;
}

function outputsCard(outputs: readonly OutputInfo[]): string {
  if (outputs.length === 0) return '';
  const rows = outputs
    .map(
      (o) =>
        `<tr><td class="mono">${esc(o.sink)}</td>${o.rows !== undefined ? `<td class="n">${esc(o.rows.toLocaleString('en-US'))}</td>` : `<td class="n gapv">–</td>`}<td class="about">${esc(o.note ?? '')}</td></tr>`,
    )
    .join('');
  return `<section class="card"><h2>Outputs</h2><table><thead><tr><th>sink</th><th class="n">rows now</th><th></th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

/** A change made by hand, as a row of the attempts table. */
function changeRow(c: StateChangeMark): string {
  return (
    `<tr class="change-row" data-change="${esc(c.kind)}"><td class="mono" style="color:${CHANGE_COLOR}">${esc(c.kind.replace('-', ' '))}</td>` +
    `<td>${esc(c.at.toISOString().slice(0, 19).replace('T', ' '))}</td>` +
    `<td colspan="8" class="about">${esc(c.what)}${c.by ? ` — ${esc(c.by)}` : ''}</td></tr>`
  );
}

function runsTable(points: readonly RunPoint[], changes: readonly StateChangeMark[]): string {
  // Newest first, changes made by hand between the attempts they came between.
  const entries: { at: number; html: () => string }[] = [
    ...changes.map((c) => ({ at: c.at.getTime(), html: () => changeRow(c) })),
  ];
  const attemptRows = [...points].map((p) => ({
    at: p.startedAt?.getTime() ?? 0,
    html: () => {
      const u = p.raw.units as Record<string, unknown> | undefined;
      const units =
        u && typeof u === 'object' && num(u.total) !== undefined
          ? `${(num(u.committed) ?? 0) + (num(u.skipped) ?? 0)}/${num(u.total)}`
          : '–';
      // Why records went to the dead letters, as the run counted them (most frequent first).
      const reasons = (Array.isArray(p.raw.deadLetterReasons) ? p.raw.deadLetterReasons : [])
        .filter((r): r is Record<string, unknown> => r !== null && typeof r === 'object')
        .map((r) => `${String(r.reason)} ×${num(r.count) ?? '?'}`)
        .join('; ');
      return (
        `<tr data-run="${esc(p.run)}" data-attempt="${p.attempt}"><td class="mono">${esc(p.run)}${p.attempt > 1 ? ` #${p.attempt}` : ''}</td>` +
        `<td>${esc(p.startedAt ? p.startedAt.toISOString().slice(0, 19).replace('T', ' ') : '?')}</td>` +
        `<td>${pill(p.status)}${p.resumed ? ' <span class="about">resumed</span>' : ''}` +
        (p.backfill
          ? ` <span class="status-pill" style="background:${BACKFILL_COLOR}" title="${esc(`${p.backfill.from ?? '…'} → ${p.backfill.to ?? 'now'}`)}">backfill</span>`
          : '') +
        '</td>' +
        cell(durationMs(p), 'ms') +
        `<td class="n">${esc(units)}</td>` +
        cell(num(p.raw.records)) +
        cell(num(p.raw.deadLetters)) +
        cell(num(p.raw.retries)) +
        cell(paidCalls(p)) +
        cell(recordsCharged(p)) +
        '</tr>' +
        // What went wrong, and why records were set aside: a row of its own, as wide as the table.
        (p.cause !== undefined || reasons || p.backfill
          ? `<tr class="detail"><td colspan="10">` +
            (p.cause !== undefined
              ? `<div class="cause">${esc(p.cause)}${p.exitCode !== undefined && p.status !== 'succeeded' ? ` (exit ${p.exitCode})` : ''}</div>`
              : '') +
            (reasons ? `<div class="reasons">dead letters: ${esc(reasons)}</div>` : '') +
            (p.backfill
              ? `<div class="reasons">backfill of ${esc(p.backfill.from ?? '…')} → ${esc(p.backfill.to ?? 'now')}</div>`
              : '') +
            '</td></tr>'
          : '')
      );
    },
  }));
  entries.push(...attemptRows);
  // Stable: an attempt and a change at the same instant keep the history's order.
  const rows = entries
    .map((e, i) => ({ ...e, i }))
    .sort((a, b) => b.at - a.at || b.i - a.i)
    .map((e) => e.html())
    .join('');
  return (
    `<section class="card"><h2>Attempts and changes made by hand, newest first</h2><table><thead><tr><th>run</th><th>started (UTC)</th><th>status</th>` +
    `<th class="n">took</th><th class="n">units</th><th class="n">records</th>` +
    `<th class="n">dead letters</th><th class="n">retries</th><th class="n">paid calls</th><th class="n">charged</th></tr></thead><tbody>${rows}</tbody></table></section>`
  );
}

export function renderReport(input: ReportInput): string {
  const { points } = input;
  const first = points[0]?.startedAt;
  const last = points[points.length - 1]?.startedAt;
  const span =
    points.length === 0
      ? 'no runs recorded yet'
      : `${points.length} attempt(s)${input.total > points.length ? ` (the newest of ${input.total})` : ''}` +
        (first && last ? `, ${first.toISOString().slice(0, 10)} to ${last.toISOString().slice(0, 10)}` : '');
  const statusLegend = (['succeeded', 'failed', 'crashed', 'interrupted', 'running'] as const)
    .map((s) => `<span><i class="sw" style="background:${STATUS_COLORS[s]}"></i>${s}</span>`)
    .join('');
  // Changes made before the first attempt charted are outside the charts (they are in `sluice runs`).
  const firstAt = points[0]?.startedAt?.getTime();
  const changes = (input.changes ?? []).filter((c) => firstAt !== undefined && c.at.getTime() >= firstAt);
  const chartCards = charts(points)
    .map((c) => {
      const legend = c.series
        .map(
          (s, k) =>
            `<span><i class="sw" style="background:${seriesColor(s, k)}"></i>${esc(s.label)}${s.values.every((v) => v === undefined) ? ' (not recorded)' : ''}</span>`,
        )
        .join('');
      return `<section class="card"><h2>${esc(c.title)}</h2><p class="about">${esc(c.about)}</p>${c.series.length > 1 || c.kind === 'lines' ? `<p class="legend">${legend}</p>` : ''}${c.series.length === 0 ? '<p class="about">nothing recorded</p>' : renderChart(c, points, changes)}</section>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice report: ${esc(input.pipeline)}</title>
<style>${CSS}</style></head>
<body><main>
<h1>${esc(input.pipeline)}</h1>
<p class="sub">sluice report of <code>${esc(input.file)}</code> · ${esc(span)} · generated ${esc(input.generatedAt.toISOString().slice(0, 16).replace('T', ' '))} UTC · times in UTC</p>
${tiles(input)}
<div class="grid2">${cursorCard(input.cursor)}${outputsCard(input.outputs)}</div>
<p class="legend">Attempt status (the strip under each chart; a tinted column and ✕ mark attempts that did not succeed; a dash on the axis: not recorded): ${statusLegend}</p>
<p class="legend"><span><i class="sw" style="background:none;border:1.5px dashed ${BACKFILL_COLOR}"></i><b style="color:${BACKFILL_COLOR}">B</b> a backfill (<code>sluice run --from</code>)</span><span><i class="sw" style="background:none;border-left:2px dashed ${CHANGE_COLOR};border-radius:0"></i>a change made by hand between two attempts (<code>sluice state set</code> / <code>reset</code> / <code>drop</code>)</span></p>
<div class="grid2">${chartCards}</div>
${runsTable(points, changes)}
</main></body></html>
`;
}
