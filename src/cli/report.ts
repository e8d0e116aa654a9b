/**
 * How a failed command ends: one line `error: <what went wrong>` and one line `  fix: <what to do>`, never a stack
 * trace for an expected error (`--debug` adds it). Exit status 2 for a wrong command line, 1 for everything else.
 */
import { SluiceError } from '../core/errors.js';
import type { CliIo } from './io.js';

/** A command line yargs or a command refused: wrong arguments, a missing `--yes`. */
export class UsageError extends SluiceError {
  constructor(message: string, hint: string) {
    super(message, { hint });
    this.name = 'UsageError';
  }
}

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

export function reportError(io: CliIo, err: unknown, debug: boolean): number {
  if (err instanceof SluiceError) {
    io.err(`error: ${oneLine(err.message)}`);
    if (err.hint) io.err(`  fix: ${oneLine(err.hint)}`);
    if (debug && err.stack) io.err(err.stack);
    return err instanceof UsageError ? EXIT_USAGE : EXIT_FAILURE;
  }
  const message = err instanceof Error ? err.message : String(err);
  io.err(`error: ${oneLine(message) || 'unexpected failure'}`);
  io.err(
    debug && err instanceof Error && err.stack
      ? err.stack
      : '  fix: this is not an error sluice expected: run again with --debug and report the stack trace',
  );
  return EXIT_FAILURE;
}
