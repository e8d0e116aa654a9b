/**
 * The interrupt grace is one number wherever it is told (issue 31): the log line an interrupt writes names the grace
 * (`limits.interrupt_grace_s`) and the part of it units in flight may use, and docs/guides/limits.md quotes the
 * same line with the same default.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, interruptGraceMs, unitGraceMs } from '../../src/core/limits.js';
import { InterruptGrace } from '../../src/runtime/interrupt.js';
import { createLogger } from '../../src/runtime/logger.js';

const guide = readFileSync(path.resolve(import.meta.dirname, '../../docs/guides/limits.md'), 'utf8').replace(
  /\s*\n\s*/g,
  ' ',
);

function interruptLine(graceMs: number): string {
  const lines: string[] = [];
  const grace = new InterruptGrace(
    graceMs,
    createLogger({ format: 'text', level: 'warn', write: (l) => lines.push(l) }),
  );
  grace.start('SIGINT');
  grace.end();
  expect(lines).toHaveLength(1);
  return lines[0]!.replace(/^warn: /, '');
}

describe('the interrupt grace', () => {
  it('the log names the grace and the units’ part of it; the guide quotes the same line and default', () => {
    const graceMs = interruptGraceMs(undefined);
    expect(graceMs).toBe(DEFAULT_LIMITS.interruptGraceMs);
    const line = interruptLine(graceMs);
    const grace = `${graceMs / 1000} s`;
    const units = `${unitGraceMs(graceMs) / 1000} s`;
    expect(line).toContain(`units in flight may commit for ${units}`);
    expect(line).toContain(`the run exits within its grace of ${grace} (limits.interrupt_grace_s`);
    expect(guide).toContain(`\`limits.interrupt_grace_s\` (default ${grace},`);
    expect(guide).toContain(`${units} of the default ${grace}`);
    // The guide's quote is the line's start, word for word.
    const quoted = /`(SIGINT: stopping: [^`]*)`/.exec(guide)?.[1];
    expect(quoted).toBeDefined();
    expect(line.startsWith(quoted!)).toBe(true);
  });

  it('a configured grace is the one the line names', () => {
    expect(interruptLine(interruptGraceMs({ interrupt_grace_s: 3 }))).toMatch(
      /may commit for 2\.4 s, then are abandoned; the run exits within its grace of 3 s/,
    );
  });
});
