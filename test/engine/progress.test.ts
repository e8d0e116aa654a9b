import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/core/types.js';
import { Progress } from '../../src/engine/progress.js';

const counters = () => ({ records: 0, bytes: 0, retries: 0, deadLetters: 0 });

afterEach(() => {
  vi.useRealTimers();
});

function setup(tty: boolean) {
  vi.useFakeTimers();
  const out: string[] = [];
  const startedAt = Date.now();
  const c = counters();
  const p = new Progress({ counters: c, startedAt }, { tty, intervalMs: 10_000, write: (s) => out.push(s) });
  return { p, c, out };
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
    expect(last[1]).toMatch(/units {4}\[#{8}\.{22}\] 1\/4 {2}ETA 3\.0 s/);
    expect(last[2]).toMatch(/records {2}2,000 \(2,000\/s\)/);
    expect(last[3]).toMatch(/bytes {4}2\.0 KiB \(2\.0 KiB\/s\)/);
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
});
