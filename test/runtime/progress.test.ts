import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/core/types.js';
import { formatBytes } from '../../src/core/limits.js';
import { fitToWidth, Progress, rowsOf, type ProgressTerminal } from '../../src/runtime/progress.js';

const counters = () => ({ records: 0, bytes: 0, retries: 0, deadLetters: 0 });

afterEach(() => {
  vi.useRealTimers();
});

/** A terminal whose width the test sets, and resizes. */
function fakeTerminal(columns: number) {
  const listeners = new Set<() => void>();
  const terminal: ProgressTerminal & { resize(to: number): void; listening(): number } = {
    columns: () => columns,
    onResize: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    resize: (to) => {
      columns = to;
      for (const l of listeners) l();
    },
    listening: () => listeners.size,
  };
  return terminal;
}

function setup(tty: boolean, columns = 120) {
  vi.useFakeTimers();
  const out: string[] = [];
  const startedAt = Date.now();
  const c = counters();
  const terminal = fakeTerminal(columns);
  const p = new Progress({ counters: c, startedAt }, { tty, intervalMs: 10_000, write: (s) => out.push(s), terminal });
  return { p, c, out, terminal };
}

/** The lines of a drawing as they appear: without the erase-line code in front of each. */
function linesOf(drawing: string): string[] {
  return drawing.split('\n').map((l) => (l.startsWith('\x1b[2K') ? l.slice('\x1b[2K'.length) : l));
}

describe('Progress', () => {
  it('draws a line per stage on a terminal: plan, a units bar with ETA, records and bytes with rates', () => {
    const { p, c, out } = setup(true);
    p.state.plan = '4 unit(s) planned';
    p.state.unitsTotal = 4;
    p.state.unitsDone = 1;
    c.records = 2000;
    c.bytes = 2048;
    p.start();
    vi.advanceTimersByTime(1000);
    const last = out.at(-1)!.split('\n');
    expect(last).toHaveLength(4);
    expect(last[0]).toContain('plan     4 unit(s) planned');
    expect(last[1]).toMatch(/units {4}\[#{8}\.{22}\] 1\/4 {2}ETA 3 s/);
    expect(last[2]).toMatch(/records {2}2,000 \(2,000\/s\)/);
    expect(last[3]).toMatch(/bytes {4}2 KiB \(2 KiB\/s\)/);
    p.stop();
    expect(out.at(-1)).toBe('\n');
  });

  it('lifts the bars off the screen before a log line, then draws them again below it', () => {
    const { p, out } = setup(true);
    const lines: string[] = [];
    const log: Logger = { debug: () => {}, info: (m) => lines.push(m), warn: () => {}, error: () => {} };
    p.start();
    vi.advanceTimersByTime(200);
    const wrapped = p.wrap(log);
    out.length = 0;
    wrapped.info('snapshot snap_1: ready');
    expect(lines).toEqual(['snapshot snap_1: ready']);
    // Cursor up three lines and clear, before the line is logged; then the four lines again.
    expect(out[0]).toBe('\x1b[3A\r\x1b[0J');
    expect(out[1]!.split('\n')).toHaveLength(4);
    p.stop();
  });

  it('writes a plain periodic line when not on a terminal, and leaves logging alone', () => {
    const { p, c, out } = setup(false);
    const log: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    expect(p.wrap(log)).toBe(log);
    p.state.unitsTotal = 2;
    c.records = 10;
    p.start();
    vi.advanceTimersByTime(10_000);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^progress: units 0\/2 {2}records 10 \(1\/s\) {2}bytes 0 B \(0 B\/s\) {2}ETA -\n$/);
    p.stop();
    expect(out).toHaveLength(1);
  });

  it('cuts every line to the terminal width, keeping the unit counts whole on a narrow terminal', () => {
    const { p, c, out } = setup(true, 50);
    p.state.plan = 'waiting for snapshot snap_m2bxug4e2o352v1jv1: building (3 of 60 parts)';
    p.state.unitsTotal = 108;
    p.state.unitsDone = 12;
    c.records = 1_234_567;
    c.bytes = 987_654_321;
    p.start();
    vi.advanceTimersByTime(1000);
    const lines = linesOf(out.at(-1)!);
    expect(lines).toHaveLength(4);
    for (const l of lines) expect([...l].length).toBeLessThanOrEqual(49);
    expect(lines[0]).toBe('plan     waiting for snapshot snap_m2bxug4e2o352…');
    expect(lines[1]).toMatch(/^units {4}\[#*\.*\] 12\/108 {2}ETA 8 s$/);
    p.stop();
  });

  it('drops the bar rather than the counts when even the counts barely fit', () => {
    const { p, out } = setup(true, 30);
    p.state.unitsTotal = 108;
    p.state.unitsDone = 12;
    p.start();
    vi.advanceTimersByTime(1000);
    expect(linesOf(out.at(-1)!)[1]).toBe('units    12/108  ETA 8 s');
    p.stop();
  });

  it('redraws in place on a resize, clearing the rows the terminal re-wrapped the old drawing into', () => {
    const { p, out, terminal } = setup(true, 120);
    p.state.plan = 'x'.repeat(100);
    p.start();
    vi.advanceTimersByTime(200);
    out.length = 0;
    // At 40 columns the 4 drawn lines take 3 + 2 + 1 + 1 rows (the plan line has 109 characters, the units line
    // 53): up 6, then redraw.
    terminal.resize(40);
    expect(out[0]).toBe('\x1b[6A\r\x1b[0J');
    const lines = linesOf(out[1]!);
    expect(lines[0]).toHaveLength(39);
    // The next redraw moves up over the 4 rows of the new, fitting drawing only.
    out.length = 0;
    vi.advanceTimersByTime(200);
    expect(out[0]).toBe('\x1b[3A\r\x1b[0J');
    p.stop();
    expect(terminal.listening()).toBe(0);
  });

  it('fitToWidth leaves a fitting line alone and cuts a long one with an ellipsis, one cell short of the edge', () => {
    expect(fitToWidth('abc', 10)).toBe('abc');
    expect(fitToWidth('a'.repeat(9), 10)).toBe('a'.repeat(9));
    expect(fitToWidth('a'.repeat(10), 10)).toBe('aaaaaaaa…');
    expect(fitToWidth('ééééé', 4)).toBe('éé…');
  });

  it('rowsOf counts the rows lines take once wrapped', () => {
    expect(rowsOf(['', 'abc', 'a'.repeat(10), 'a'.repeat(11)], 10)).toBe(1 + 1 + 1 + 2);
  });

  it('formats bytes and rates in rounded human units', () => {
    expect(formatBytes(286.62420382165607)).toBe('287 B');
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(5 * 1024 ** 3)).toBe('5 GiB');
  });
});
