/**
 * Progress: on a TTY, one redrawn line per stage (units, records, bytes, rate, ETA); otherwise a plain line every
 * `intervalMs`, which is what a cron log wants.
 */
import type { Counters } from '../core/types.js';

export interface ProgressState {
  unitsTotal: number;
  unitsDone: number;
  counters: Counters;
  startedAt: number;
}

export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private drawn = 0;

  constructor(
    private readonly state: ProgressState,
    private readonly opts: { tty: boolean; intervalMs: number; write: (s: string) => void },
  ) {}

  start(): void {
    this.timer = setInterval(() => this.draw(), this.opts.tty ? 200 : this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.opts.tty && this.drawn) {
      this.draw();
      this.opts.write('\n');
    }
  }

  private draw(): void {
    const s = this.state;
    const secs = Math.max((Date.now() - s.startedAt) / 1000, 0.001);
    const rate = s.counters.records / secs;
    const frac = s.unitsTotal ? s.unitsDone / s.unitsTotal : 0;
    const eta = frac > 0 && frac < 1 ? formatDuration((secs / frac - secs) * 1000) : '-';
    const units = `units ${s.unitsDone}/${s.unitsTotal}`;
    const line = `${units}  records ${s.counters.records.toLocaleString('en-US')}  ${formatBytes(s.counters.bytes)}  ${Math.round(rate).toLocaleString('en-US')} rec/s  ETA ${eta}`;
    if (this.opts.tty) {
      const width = 24;
      const filled = Math.round(frac * width);
      this.opts.write(`\r\x1b[2K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${line}`);
      this.drawn++;
    } else {
      this.opts.write(`progress: ${line}\n`);
    }
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
