/**
 * An interrupted run (SIGINT, SIGTERM): what it throws. The CLI aborts `RunOptions.signal` with the signal's name
 * as the reason; the exit code (130 or 143) follows from it.
 */
import { InterruptedError, type InterruptSignal } from '../core/errors.js';
import type { RunSummary } from './api.js';

export function interruptSignalOf(signal: AbortSignal): InterruptSignal {
  return signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT';
}

export function interrupted(signal: AbortSignal, units: RunSummary['units']): InterruptedError {
  return new InterruptedError(
    interruptSignalOf(signal),
    units.total === 0
      ? 'interrupted before any unit ran; run again to resume'
      : `interrupted: ${units.done}/${units.total} units committed; run again to resume`,
    { hint: 'run the same command again: committed units are kept and skipped' },
  );
}
