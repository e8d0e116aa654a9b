/**
 * How a failed command ends: one line `error: <what went wrong>` and one line `  fix: <what to do>`, never a stack
 * trace for an expected error (`--debug` adds it); under `--log-format json` the same as one JSON line, so a log
 * collector reading stderr line by line gets the cause too. The exit status is the error's `exitCode`
 * (EXIT_CODES in core/errors.ts): 2 for a wrong command line or pipeline file, 1 for anything unexpected.
 */
import { EXIT_CODES, InterruptedError, SluiceError } from '../core/errors.js';
import { printableLine, printableLines } from '../core/printable.js';
import type { CliIo } from './io.js';

/** A command line yargs or a command refused: wrong arguments, a missing `--yes`. */
export class UsageError extends SluiceError {
  constructor(message: string, hint: string) {
    super(message, { hint, exitCode: EXIT_CODES.config });
    this.name = 'UsageError';
  }
}

export type ErrorFormat = 'text' | 'json';

/** One line, without control characters (the message may quote data or the service's answer). */
function oneLine(text: string): string {
  return printableLine(text.replace(/\s*\n\s*/g, ' ').trim());
}

const UNEXPECTED_HINT = 'this is not an error sluice expected: run again with --debug and report the stack trace';

/** A stack's lines kept, its first (`Name: message`, which may quote data) made one line. */
function printableStack(err: Error, stack: string): string {
  const head = `${err.name}: ${err.message}`;
  return stack.startsWith(head)
    ? printableLine(head) + printableLines(stack.slice(head.length))
    : printableLines(stack);
}

export function reportError(io: CliIo, err: unknown, opts: { debug: boolean; format: ErrorFormat }): number {
  const expected = err instanceof SluiceError;
  const message = oneLine(err instanceof Error ? err.message : String(err)) || 'unexpected failure';
  const hint = expected ? (err.hint !== undefined ? oneLine(err.hint) : undefined) : UNEXPECTED_HINT;
  const exitCode = expected ? err.exitCode : EXIT_CODES.failure;
  const stack = opts.debug && err instanceof Error && err.stack ? printableStack(err, err.stack) : undefined;
  if (opts.format === 'json') {
    // A run's failure carries its summary: the line says which run, like every other line of the run.
    const run = (err as { summary?: { run?: string; pipeline?: string; shard?: string } } | undefined)?.summary;
    io.err(
      JSON.stringify({
        time: new Date().toISOString(),
        level: 'error',
        msg: message,
        ...(run?.run !== undefined && { run: run.run, pipeline: run.pipeline }),
        ...(run?.shard !== undefined && { shard: run.shard }),
        ...(hint !== undefined && { fix: hint }),
        error: err instanceof Error ? err.name : typeof err,
        exit_code: exitCode,
        ...(stack !== undefined && { stack }),
      }),
    );
    return exitCode;
  }
  if (err instanceof InterruptedError) {
    // Not a failure to fix: the message already says what to do (`… units committed; run again to resume`).
    io.err(message);
  } else {
    io.err(`error: ${message}`);
    // An unexpected error's stack replaces the fix line under --debug: reporting it is the fix.
    if (hint !== undefined && !(stack !== undefined && !expected)) io.err(`  fix: ${hint}`);
  }
  if (stack !== undefined) io.err(stack);
  return exitCode;
}
