/**
 * Charts as inline SVG, drawn here rather than by a library: one point per attempt along the x axis, attempts that
 * did not succeed marked in every chart. Every drawn value carries its series, run, attempt and value as data
 * attributes (what test/cli/report.test.ts compares with runs.jsonl) and a <title> a browser shows on hover. A value
 * the history lacks is drawn as a gap marker, never as a zero.
 */
import { attemptsBefore, type Chart, type RunPoint, type Series, type StateChangeMark, type Status } from './series.js';
import { formatDuration } from '../../core/duration.js';
import { formatBytes } from '../../core/limits.js';

const W = 580;
const H = 220;
const M = { left: 56, right: 12, top: 16, bottom: 44 };
const PLOT_W = W - M.left - M.right;
const PLOT_H = H - M.top - M.bottom;

export const SERIES_COLORS = ['#2f6db5', '#e08a1e', '#3a9d5d', '#8e5bb5', '#c2497a', '#6b7c8f'];
/** A series' colour: its own where it has one (failures in red), else the palette's by its place in the chart. */
export function seriesColor(s: Series, k: number): string {
  return s.color ?? SERIES_COLORS[k % SERIES_COLORS.length]!;
}

/** Backfills and changes made by hand: marks of their own, apart from the series' and the statuses' colours. */
export const BACKFILL_COLOR = '#7b4fc4';
export const CHANGE_COLOR = '#0f7c8c';
export const STATUS_COLORS: Record<Status, string> = {
  succeeded: '#3a9d5d',
  failed: '#d33c3c',
  crashed: '#8f1d1d',
  interrupted: '#e0a21e',
  running: '#8a94a3',
  unknown: '#b0b6bf',
};

/** Text for HTML and SVG, attribute values included: the history and the pipeline are not trusted. */
export function esc(text: unknown): string {
  return String(text).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** 1234 → "1.2k", 2500000 → "2.5M": axis labels stay short. */
export function shortCount(n: number): string {
  const abs = Math.abs(n);
  const fmt = (v: number, s: string): string => `${Number(v.toFixed(v < 10 ? 1 : 0))}${s}`;
  if (abs >= 1e9) return fmt(n / 1e9, 'G');
  if (abs >= 1e6) return fmt(n / 1e6, 'M');
  if (abs >= 1e4) return fmt(n / 1e3, 'k');
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

export function formatValue(v: number, unit: Series['unit']): string {
  return unit === 'ms' ? formatDuration(v) : unit === 'bytes' ? formatBytes(v) : v.toLocaleString('en-US');
}

/** An axis tick or a cut value, short. */
function axisText(v: number, unit: Series['unit']): string {
  return unit === 'ms' ? formatDuration(v) : unit === 'bytes' ? formatBytes(v) : shortCount(v);
}

/** A round upper bound for the y axis, and its ticks. */
export function niceScale(max: number, unit: Series['unit']): number[] {
  if (!(max > 0)) return [0, 1];
  if (unit === 'ms') {
    // Durations tick at whole seconds, minutes or hours where they can.
    const steps = [100, 250, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5];
    const step = steps.find((s) => s * 4 >= max) ?? Math.ceil(max / 4 / 36e5) * 36e5;
    return [0, 1, 2, 3, 4].map((i) => i * step).filter((v, i, a) => i === 0 || a[i - 1]! < max);
  }
  // Bytes tick at round numbers of their binary unit (0, 2.5 MiB, 5 MiB), counts at round numbers.
  const scale = unit === 'bytes' ? 1024 ** Math.max(0, Math.floor(Math.log(max) / Math.log(1024))) : 1;
  const raw = max / 4 / scale;
  const mag = 10 ** Math.floor(Math.log10(raw));
  // Counts are whole: no tick at 0.5 records.
  const step = Math.max(1, ([1, 2, 2.5, 5, 10].find((f) => f * mag >= raw) ?? 10) * mag * scale);
  const ticks = [0];
  while (ticks[ticks.length - 1]! < max) ticks.push(ticks.length * step);
  return ticks;
}

/** `11-24 02:30` (UTC): the runs of a nightly pipeline, told apart by date and time. */
export function shortTime(d: Date | undefined): string {
  if (!d) return '?';
  const iso = d.toISOString();
  return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
}

function tooltip(p: RunPoint, s: Series, value: number | undefined): string {
  const what = value === undefined ? 'not recorded' : formatValue(value, s.unit);
  return `${s.label}: ${what} — run ${p.run}${p.attempt > 1 ? ` #${p.attempt}` : ''}, ${shortTime(p.startedAt)} UTC, ${p.status}${p.cause ? `: ${p.cause}` : ''}`;
}

function dataAttrs(p: RunPoint, s: Series, value: number | undefined): string {
  return `data-series="${esc(s.id)}" data-run="${esc(p.run)}" data-attempt="${p.attempt}" data-value="${value ?? ''}"`;
}

/**
 * The top of the y axis: the largest value, unless one value dwarfs all others (a first full load, then nightly
 * increments 1000× smaller): then the axis fits the others, so their night-to-night changes stay visible.
 */
export function axisMax(chart: Chart): number {
  // Judged on each attempt's largest value: two series that agree (records committed and read, two sinks) must not
  // make one night's load look like two.
  const attempts = Math.max(0, ...chart.series.map((s) => s.values.length));
  const values = Array.from({ length: attempts }, (_, i) =>
    Math.max(-Infinity, ...chart.series.map((s) => s.values[i] ?? -Infinity)),
  )
    .filter((v) => Number.isFinite(v))
    .sort((a, b) => b - a);
  const [first = 0, second = 0] = values;
  return values.length >= 4 && second > 0 && first > 4 * second ? second * 1.1 : first;
}

export function renderChart(
  chart: Chart,
  points: readonly RunPoint[],
  changes: readonly StateChangeMark[] = [],
): string {
  const n = Math.max(1, points.length);
  const slot = PLOT_W / n;
  const unit = chart.series[0]?.unit ?? 'count';
  const ticks = niceScale(axisMax(chart), unit);
  const top = ticks[ticks.length - 1]!;
  // A value above the axis (a first full load among nightly increments) is drawn cut, with its value written.
  const y = (v: number): number => M.top + PLOT_H - (top > 0 ? (Math.min(v, top) / top) * PLOT_H : 0);
  const cx = (i: number): number => M.left + slot * (i + 0.5);
  const base = M.top + PLOT_H;
  const parts: string[] = [];

  // Attempts that did not succeed: a tinted column behind every chart, so a bad night lines up across charts.
  points.forEach((p, i) => {
    if (p.status === 'succeeded') return;
    parts.push(
      `<rect class="status-band" x="${(M.left + slot * i).toFixed(1)}" y="${M.top}" width="${slot.toFixed(1)}" height="${PLOT_H}" fill="${STATUS_COLORS[p.status]}" opacity="0.12"/>`,
    );
  });
  // Backfills: a column outlined in their colour behind every chart, `B` over it.
  points.forEach((p, i) => {
    if (!p.backfill) return;
    const window = `${p.backfill.from ?? '…'} → ${p.backfill.to ?? 'now'}`;
    parts.push(
      `<rect class="backfill" data-backfill="${esc(p.run)}" data-attempt="${p.attempt}" x="${(M.left + slot * i + 1).toFixed(1)}" y="${M.top}" width="${Math.max(1, slot - 2).toFixed(1)}" height="${PLOT_H}" fill="${BACKFILL_COLOR}" fill-opacity="0.07" stroke="${BACKFILL_COLOR}" stroke-dasharray="3 2"><title>${esc(`backfill ${window} — run ${p.run}`)}</title></rect>`,
    );
  });
  for (const t of ticks) {
    const ty = y(t).toFixed(1);
    parts.push(`<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${ty}" y2="${ty}"/>`);
    parts.push(
      `<text class="tick" x="${M.left - 6}" y="${ty}" text-anchor="end" dominant-baseline="middle">${esc(axisText(t, unit))}</text>`,
    );
  }

  const gap = (i: number, k: number, s: Series, p: RunPoint): string => {
    const gx = cx(i) + (k - (chart.series.length - 1) / 2) * Math.min(8, slot / (chart.series.length + 1));
    return `<g class="gap" ${dataAttrs(p, s, undefined)}><title>${esc(tooltip(p, s, undefined))}</title><line x1="${(gx - 3).toFixed(1)}" x2="${(gx + 3).toFixed(1)}" y1="${base - 3}" y2="${base - 3}"/></g>`;
  };

  /**
   * The marks of a value above the axis: a break across its bar (or above its point), and the attempt's largest such
   * value written once over its slot (two series cut at one attempt — committed and read — share one number).
   */
  const cutValues = new Map<number, number>();
  const cut = (i: number, x: number, width: number, v: number): string => {
    cutValues.set(i, Math.max(v, cutValues.get(i) ?? v));
    return `<path class="cut-mark" d="M${(x - width / 2 - 1).toFixed(1)},${M.top + 14} l${(width + 2).toFixed(1)},-6"/>`;
  };

  chart.series.forEach((s, k) => {
    const color = seriesColor(s, k);
    if (chart.kind === 'bars') {
      const group = Math.min(slot * 0.78, 44);
      const bw = group / chart.series.length;
      points.forEach((p, i) => {
        const v = s.values[i];
        if (v === undefined) return void parts.push(gap(i, k, s, p));
        const x = cx(i) - group / 2 + k * bw;
        const h = Math.max(v > 0 ? 1 : 0, base - y(v));
        parts.push(
          `<rect class="bar" ${dataAttrs(p, s, v)} x="${x.toFixed(1)}" y="${(base - h).toFixed(1)}" width="${Math.max(1, bw - 1).toFixed(1)}" height="${h.toFixed(1)}" fill="${color}"><title>${esc(tooltip(p, s, v))}</title></rect>`,
        );
        if (v > top) parts.push(cut(i, x + (bw - 1) / 2, Math.max(1, bw - 1), v));
      });
      return;
    }
    // Lines: broken where a value is missing, so a gap is not drawn as a trend. Earlier series are drawn wider and
    // beneath later ones: two sinks that committed the same show as one line inside another.
    const under = chart.series.length - 1 - k;
    const width = 2 + under * 3;
    const radius = (3.2 + under * 1.8).toFixed(1);
    let run: string[] = [];
    const flush = (): void => {
      if (run.length > 1)
        parts.push(
          `<polyline class="line" fill="none" stroke="${color}" stroke-width="${width}" points="${run.join(' ')}"/>`,
        );
      run = [];
    };
    points.forEach((p, i) => {
      const v = s.values[i];
      if (v === undefined) {
        flush();
        return void parts.push(gap(i, k, s, p));
      }
      run.push(`${cx(i).toFixed(1)},${y(v).toFixed(1)}`);
    });
    flush();
    points.forEach((p, i) => {
      const v = s.values[i];
      if (v === undefined) return;
      parts.push(
        `<circle class="point" ${dataAttrs(p, s, v)} cx="${cx(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="${radius}" fill="${color}"><title>${esc(tooltip(p, s, v))}</title></circle>`,
      );
      if (v > top) parts.push(cut(i, cx(i), 8, v));
    });
  });

  for (const [i, v] of cutValues)
    parts.push(
      `<text class="cut" x="${cx(i).toFixed(1)}" y="${M.top - 4}" text-anchor="middle">${esc(axisText(v, unit))}</text>`,
    );

  // Changes made by hand: a dashed line between the attempts they came between, named at its top. Several between
  // the same two attempts share the line, each named in its title.
  const byPlace = new Map<number, StateChangeMark[]>();
  for (const c of changes) {
    const at = attemptsBefore(points, c.at);
    byPlace.set(at, [...(byPlace.get(at) ?? []), c]);
  }
  for (const [after, marks] of byPlace) {
    const x = (M.left + slot * after).toFixed(1);
    const words = marks.map((c) => c.kind.replace('state-', '')).join('+');
    const title = marks
      .map((c) => `${c.kind.replace('-', ' ')}: ${c.what} — ${c.by ?? '?'}, ${shortTime(c.at)} UTC`)
      .join('\n');
    parts.push(
      `<g class="change" data-change="${esc(marks.map((c) => c.kind).join(' '))}" data-after="${after}"><title>${esc(title)}</title>` +
        `<line x1="${x}" x2="${x}" y1="${M.top - 2}" y2="${base}" stroke="${CHANGE_COLOR}" stroke-width="1.5" stroke-dasharray="4 3"/>` +
        // Written down the line from its top, beside it: clear of the failure and backfill marks over the slots.
        `<text class="change-label" x="${x}" y="${M.top + 2}" fill="${CHANGE_COLOR}" text-anchor="end" transform="rotate(-90 ${x} ${M.top + 2})" dy="-4">${esc(words)}</text></g>`,
    );
  }

  // Under the axis: each attempt's status, then its date for every few attempts (as many as fit).
  parts.push(`<line class="axis" x1="${M.left}" x2="${W - M.right}" y1="${base}" y2="${base}"/>`);
  points.forEach((p, i) => {
    const mark = p.status === 'succeeded' ? '' : p.status === 'interrupted' || p.status === 'running' ? '!' : '✕';
    parts.push(
      `<rect class="status" data-run="${esc(p.run)}" data-attempt="${p.attempt}" data-status="${esc(p.status)}" x="${(cx(i) - Math.min(5, slot * 0.4)).toFixed(1)}" y="${base + 4}" width="${Math.min(10, slot * 0.8).toFixed(1)}" height="6" fill="${STATUS_COLORS[p.status]}"><title>${esc(`run ${p.run}${p.attempt > 1 ? ` #${p.attempt}` : ''}: ${p.status}${p.cause ? ` — ${p.cause}` : ''}`)}</title></rect>`,
    );
    if (mark)
      parts.push(
        `<text class="mark" x="${cx(i).toFixed(1)}" y="${M.top + 10}" text-anchor="middle" fill="${STATUS_COLORS[p.status]}">${mark}</text>`,
      );
    if (p.backfill)
      parts.push(
        `<text class="mark" x="${cx(i).toFixed(1)}" y="${M.top + (mark ? 22 : 10)}" text-anchor="middle" fill="${BACKFILL_COLOR}">B</text>`,
      );
  });
  const every = Math.max(1, Math.ceil(n / Math.floor(PLOT_W / 62)));
  points.forEach((p, i) => {
    if (i % every !== 0 && i !== n - 1) return;
    if (i !== n - 1 && n - 1 - i < every) return;
    parts.push(
      `<text class="xlabel" x="${cx(i).toFixed(1)}" y="${base + 24}" text-anchor="middle">${esc(shortTime(p.startedAt))}</text>`,
    );
  });
  if (points.length === 0)
    parts.push(`<text class="empty" x="${W / 2}" y="${M.top + PLOT_H / 2}" text-anchor="middle">no runs yet</text>`);

  return `<svg class="chart" data-chart="${esc(chart.id)}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(chart.title)}" xmlns="http://www.w3.org/2000/svg">${parts.join('')}</svg>`;
}
