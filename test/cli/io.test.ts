/**
 * The process's own side of an interrupt (src/cli/io.ts): whatever the run is doing — even stuck where no abort
 * reaches it — the process exits with its interrupt code once the grace after the first signal is spent. A process
 * that only listens (as a run stuck in a native load would) stands in for the run; it is the compiled module the
 * executable uses, so no CLI start is paid for.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const IO = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/src/cli/io.js')).href;

/** A process that listens for interrupts with `exitAfterMs` and never ends on its own. */
function stuck(exitAfterMs: number) {
  const script = `
    const { processIo } = await import(${JSON.stringify(IO)});
    processIo().interrupts({ exitAfterMs: ${exitAfterMs} });
    setInterval(() => {}, 1000);
    process.stdout.write('listening\\n');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe' });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const listening = new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const ended = once(child, 'close').then(([code, signal]) => ({ code, signal, stderr }));
  return { child, listening, ended };
}

describe('an interrupted process whose run does not stop', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('%s: exits %i by itself when the grace is spent, saying so', async (signal, code) => {
    const p = stuck(200);
    await p.listening;
    p.child.kill(signal);
    const r = await p.ended;
    expect(r.signal, r.stderr).toBeNull();
    expect(r.code, r.stderr).toBe(code);
    expect(r.stderr).toMatch(
      new RegExp(`${signal}: the run did not stop within its grace \\(limits\\.interrupt_grace_s\\): exiting now`),
    );
  });
});
