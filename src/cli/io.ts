/**
 * What commands may touch of the outside world, passed in rather than reached for, so the whole CLI runs in-process
 * in tests. Everything written passes through `redact`: an API key cannot reach the terminal or a log file.
 */
import { redact } from '../core/redact.js';

export interface CliIo {
  /** A line (or lines) of results on stdout. */
  out(text: string): void;
  /** A line (or lines) of diagnostics on stderr. */
  err(text: string): void;
  env: Record<string, string | undefined>;
  /** Width for help text. */
  columns: number;
  /** Resolves when the user asks a long-running command (the emulator) to stop: SIGINT or SIGTERM. */
  untilStopped(): Promise<void>;
}

export function processIo(): CliIo {
  return {
    out: (text) => process.stdout.write(redact(text) + '\n'),
    err: (text) => process.stderr.write(redact(text) + '\n'),
    env: process.env,
    columns: Math.min(120, process.stdout.columns || 100),
    untilStopped: () =>
      new Promise((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      }),
  };
}
