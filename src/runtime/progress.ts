/**
 * Progress: on a TTY, one redrawn line per stage — planning (the filter job, the snapshot's status), units (a bar
 * with ETA), records and bytes (with rates); otherwise a plain line every `intervalMs`, which is what a cron log
 * wants. Log lines written during a run go through `logLine`, which lifts the bars off the screen first, so the two
 * never interleave.
 *
 * Each line is cut to the terminal's width: a line that wrapped would take two rows, and moving the cursor up by the
 * number of lines drawn would then land inside the drawing, so every redraw would leave a copy behind. When the
 * terminal is resized, the terminal itself re-wraps what is on screen to the new width; the rows the last drawing
 * now takes are counted from its lines' lengths, and the drawing is redrawn in place at once.
 */
import { formatBytes } from '../core/limits.js';
import type { Counters, Logger } from '../core/types.js';
import { formatDuration } from '../core/duration.js';

/** The terminal the bars are drawn on: its width now, and a way to hear that it changed. */
export interface ProgressTerminal {
  columns(): number;
  /** Calls `listener` on every resize; returns how to stop. */
  onResize(listener: () => void): () => void;
}

/** stderr, where the bars go. */
export const stderrTerminal: ProgressTerminal = {
  columns: () => process.stderr.columns || 80,
  onResize: (listener) => {
    process.stderr.on('resize', listener);
    return () => process.stderr.off('resize', listener);
  },
};

/**
 * `line` cut to fit `columns` terminal cells, with `…` where it was cut. One cell is left free: a line that fills the
 * last column leaves some terminals' cursor waiting to wrap, and the next `\n` then makes an empty row.
 */
export function fitToWidth(line: string, columns: number): string {
  const room = Math.max(columns - 1, 1);
  const chars = [...line];
  return chars.length <= room ? line : chars.slice(0, room - 1).join('') + '…';
}

/** The rows `lines` take on a terminal `columns` wide, once it re-wrapped them. */
export function rowsOf(lines: string[], columns: number): number {
  const width = Math.max(columns, 1);
  return lines.reduce((rows, l) => rows + Math.max(1, Math.ceil([...l].length / width)), 0);
}

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
  /** The lines of the last TTY drawing, as written (empty: nothing on screen). */
  private drawn: string[] = [];
  /** Rows the last drawing took when it was written; a resize changes what it takes now. */
  private drawnRows = 0;
  private readonly terminal: ProgressTerminal;
  private stopListening: (() => void) | undefined;

  constructor(
    init: { counters: Counters; startedAt: number },
    private readonly opts: {
      tty: boolean;
      intervalMs: number;
      write: (s: string) => void;
      /** Default: stderr. */
      terminal?: ProgressTerminal;
    },
  ) {
    this.state = { plan: 'planning', unitsTotal: 0, unitsDone: 0, ...init };
    this.terminal = opts.terminal ?? stderrTerminal;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.draw(), this.opts.tty ? 200 : this.opts.intervalMs);
    this.timer.unref();
    if (this.opts.tty) this.stopListening = this.terminal.onResize(() => this.redrawAfterResize());
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stopListening?.();
    this.stopListening = undefined;
    if (this.opts.tty && this.drawn.length > 0) {
      this.draw();
      this.opts.write('\n');
      this.drawn = [];
      this.drawnRows = 0;
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

  private clear(rows = this.drawnRows): void {
    if (this.drawn.length === 0) return;
    // Up to the first row of the drawing, then clear to the end of the screen.
    this.opts.write(`${rows > 1 ? `\x1b[${rows - 1}A` : ''}\r\x1b[0J`);
    this.drawn = [];
    this.drawnRows = 0;
  }

  /** The terminal re-wrapped the drawing to its new width: clear the rows it takes now, and draw it to fit. */
  private redrawAfterResize(): void {
    if (this.drawn.length === 0 || !this.timer) return;
    this.clear(rowsOf(this.drawn, this.terminal.columns()));
    this.draw();
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
    const columns = this.terminal.columns();
    const counts = ` ${s.unitsDone}/${s.unitsTotal}  ETA ${eta}`;
    // The bar gives way first on a narrow terminal, so the counts stay whole: 'units    [' + bar + ']' + counts.
    const width = Math.max(0, Math.min(BAR_WIDTH, columns - 1 - 'units    []'.length - counts.length));
    const filled = Math.round(frac * width);
    const bar = width >= MIN_BAR_WIDTH ? `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]` : '';
    const lines = [
      `plan     ${s.plan}`,
      `units    ${bar}${bar ? counts : counts.trimStart()}`,
      `records  ${records}`,
      `bytes    ${bytes}`,
    ].map((l) => fitToWidth(l, columns));
    this.clear();
    this.opts.write(lines.map((l) => `\x1b[2K${l}`).join('\n'));
    this.drawn = lines;
    this.drawnRows = rowsOf(lines, columns);
  }
}

const BAR_WIDTH = 30;
/** Narrower than this, a bar tells nothing the counts beside it do not. */
const MIN_BAR_WIDTH = 5;
