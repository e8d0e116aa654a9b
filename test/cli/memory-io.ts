/**
 * A CliIo that records what a command writes, for running the CLI in-process. It does not redact (the real one
 * does), so tests see whether a command's own text would carry a secret.
 */
import type { CliIo } from '../../src/cli/io.js';

export interface MemoryIo extends CliIo {
  stdout: string[];
  stderr: string[];
  /** Ends `untilStopped()` (what SIGINT does for the real process). */
  stop(): void;
  /** Aborts the run listening on `interrupts()`, as SIGINT/SIGTERM does for the real process. */
  interrupt(signal?: 'SIGINT' | 'SIGTERM'): void;
}

export function memoryIo(env: Record<string, string | undefined> = {}): MemoryIo {
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const interrupts = new AbortController();
  const io: MemoryIo = {
    stdout: [],
    stderr: [],
    out: (text) => io.stdout.push(text),
    err: (text) => io.stderr.push(text),
    env,
    columns: 100,
    untilStopped: () => stopped,
    stop: () => stop(),
    interrupts: () => ({ signal: interrupts.signal, release: () => undefined }),
    interrupt: (signal = 'SIGINT') => interrupts.abort(signal),
  };
  return io;
}
