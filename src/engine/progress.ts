/**
 * Progress: on a TTY, one redrawn line per stage — planning (the filter job, the snapshot's status), units (a bar
 * with ETA), records and bytes (with rates); otherwise a plain line every `intervalMs`, which is what a cron log
 * wants. Log lines written during a run go through `logLine`, which lifts the bars off the screen first, so the two
 * never interleave.
 */
import type { Counters, Logger } from '../core/types.js';

export interface ProgressState {
  /** What planning is doing (`waiting for snapshot snap_x: building`), then what it found. */
  plan: string;
  unitsTotal: number;
  unitsDone: number;
  counters: Counters;
  startedAt: number;
}

export class Progress {
  readonly state: ProgressState;
  private timer: NodeJS.Timeout | undefined;
  /** Lines of the last TTY drawing (0: nothing on screen). */
  private drawn = 0;

  constructor(
    init: { counters: Counters; startedAt: number },
    private readonly opts: { tty: boolean; intervalMs: number; write: (s: string) => void },
  ) {
    this.state = { plan: 'planning', unitsTotal: 0, unitsDone: 0, ...init };
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.draw(), this.opts.tty ? 200 : this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.opts.tty && this.drawn) {
      this.draw();
      this.opts.write('\n');
      this.drawn = 0;
    }
  }

  /** A logger whose lines appear above the bars instead of through them. */
  wrap(log: Logger): Logger {
    if (!this.opts.tty) return log;
    const around =
      (f: Logger['info']): Logger['info'] =>
      (msg, fields) => {
        this.clear();
        f(msg, fields);
        if (this.timer) this.draw();
      };
    return { debug: around(log.debug), info: around(log.info), warn: around(log.warn), error: around(log.error) };
  }

  private clear(): void {
    if (!this.drawn) return;
    // Up to the first line of the drawing, then clear to the end of the screen.
    this.opts.write(`${this.drawn > 1 ? `\x1b[${this.drawn - 1}A` : ''}\r\x1b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    const s = this.state;
    const secs = Math.max((Date.now() - s.startedAt) / 1000, 0.001);
    const frac = s.unitsTotal ? s.unitsDone / s.unitsTotal : 0;
    const eta = frac > 0 && frac < 1 ? formatDuration((secs / frac - secs) * 1000) : '-';
    const records = `${s.counters.records.toLocaleString('en-US')} (${Math.round(s.counters.records / secs).toLocaleString('en-US')}/s)`;
    const bytes = `${formatBytes(s.counters.bytes)} (${formatBytes(s.counters.bytes / secs)}/s)`;
    if (!this.opts.tty) {
      this.opts.write(
        `progress: units ${s.unitsDone}/${s.unitsTotal}  records ${records}  bytes ${bytes}  ETA ${eta}\n`,
      );
      return;
    }
    const width = 30;
    const filled = Math.round(frac * width);
    const lines = [
      `plan     ${s.plan}`,
      `units    [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${s.unitsDone}/${s.unitsTotal}  ETA ${eta}`,
      `records  ${records}`,
      `bytes    ${bytes}`,
    ];
    this.clear();
    this.opts.write(lines.map((l) => `\x1b[2K${l}`).join('\n'));
    this.drawn = lines.length;
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s % 60)} s`;
}
