/**
 * What commands may touch of the outside world, passed in rather than reached for, so the whole CLI runs in-process
 * in tests. Everything written passes through `redact`: an API key cannot reach the terminal or a log file; and
 * control characters are escaped (core/printable.ts): data cannot send the terminal commands.
 */
import { EXIT_CODES, type InterruptSignal } from '../core/errors.js';
import { printableLines } from '../core/printable.js';
import { redact } from '../core/redact.js';

/** A run's view of SIGINT/SIGTERM while it listens: see `CliIo.interrupts`. */
export interface Interrupts {
  /** Aborted on the first signal, with the signal's name (`'SIGINT'`, `'SIGTERM'`) as the reason. */
  signal: AbortSignal;
  /** Stops listening: the signals' default action (exit) applies again. */
  release(): void;
}

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
  /**
   * Turns SIGINT/SIGTERM into an abort for a run, which then stops cleanly (units in flight may commit during the
   * grace, the lock is released). A second signal does not wait for that: the process exits at once, with 130 or
   * 143; nor does the end of `exitAfterMs` after the first (a unit stuck where no abort reaches, e.g. inside a
   * database's native load): whatever the run is doing, the process ends within the grace.
   */
  interrupts(opts?: { exitAfterMs?: number }): Interrupts;
  /**
   * Asks a yes/no question at a terminal; absent when there is none (cron, CI, a pipe): a command that needs
   * confirmation then wants `--yes`.
   */
  confirm?(question: string): Promise<boolean>;
}

/** What the process writes of `text`: without secrets, without control characters (newlines kept). */
export function printed(text: string): string {
  return printableLines(redact(text));
}

export function processIo(): CliIo {
  return {
    out: (text) => process.stdout.write(printed(text) + '\n'),
    err: (text) => process.stderr.write(printed(text) + '\n'),
    env: process.env,
    columns: Math.min(120, process.stdout.columns || 100),
    untilStopped: () =>
      new Promise((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      }),
    interrupts: processInterrupts,
    ...(process.stdin.isTTY && process.stderr.isTTY && { confirm: askAtTerminal }),
  };
}

async function askAtTerminal(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${printed(question)} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

function processInterrupts(opts: { exitAfterMs?: number } = {}): Interrupts {
  const controller = new AbortController();
  const on = (signal: InterruptSignal) => (): void => {
    if (!controller.signal.aborted) {
      controller.abort(signal);
      if (opts.exitAfterMs !== undefined) exitAfter(signal, opts.exitAfterMs);
      return;
    }
    // Whoever presses Ctrl-C twice wants out now: units not committed are simply read again by the next run.
    process.stderr.write(`\n${signal}: exiting at once; committed units are kept, run again to resume\n`);
    process.exit(signal === 'SIGTERM' ? EXIT_CODES.sigterm : EXIT_CODES.sigint);
  };
  /** The grace is over: units not committed are read again by the next run, as after a second signal. */
  const exitAfter = (signal: InterruptSignal, ms: number): void => {
    // Unref'd: a run that stopped in time exits on its own, without waiting for this.
    setTimeout(() => {
      process.stderr.write(
        `\n${signal}: the run did not stop within its grace (limits.interrupt_grace_s): exiting now; committed units are kept, run again to resume\n`,
      );
      process.exit(signal === 'SIGTERM' ? EXIT_CODES.sigterm : EXIT_CODES.sigint);
    }, ms).unref();
  };
  const onInt = on('SIGINT');
  const onTerm = on('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return {
    signal: controller.signal,
    release: () => {
      // Once interrupted, the process is on its way out: a second signal in the moments before it exits must still
      // end it with its own exit code and message, never by the signal (which would lose the summary's last lines).
      if (controller.signal.aborted) return;
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    },
  };
}
