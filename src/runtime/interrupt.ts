/**
 * An interrupted run (SIGINT, SIGTERM): what it throws, and how long its units in flight may go on. The CLI aborts
 * `RunOptions.signal` with the signal's name as the reason; the exit code (130 or 143) follows from it.
 *
 * No unit starts after the signal. Units in flight may still commit for most of `limits.interrupt_grace_s`
 * (`unitGraceMs`): a part nearly downloaded is not thrown away. Then their reads are cancelled — the HTTP body, the
 * decoder and the sink's input all see the abort — and nothing of them is committed. The CLI exits at the end of
 * the grace whatever the run is doing (src/cli/io.ts), so the process always ends within it.
 */
import { InterruptedError, SluiceError, type InterruptSignal } from '../core/errors.js';
import { unitGraceMs } from '../core/limits.js';
import type { Logger } from '../core/types.js';
import type { UnitCounts } from '../unit/run-units.js';
import { formatDuration } from '../core/duration.js';

export function interruptSignalOf(signal: AbortSignal): InterruptSignal {
  return signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT';
}

export function interrupted(signal: AbortSignal, units: UnitCounts): InterruptedError {
  return new InterruptedError(
    interruptSignalOf(signal),
    units.total === 0
      ? 'interrupted before any unit ran; run again to resume'
      : `interrupted: ${units.done}/${units.total} units committed; run again to resume`,
    { hint: 'run the same command again: committed units are kept and skipped' },
  );
}

/** The grace of the units in flight: `units` aborts once it is spent (or when the run ends). */
export class InterruptGrace {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly graceMs: number,
    private readonly log: Logger,
  ) {}

  /** What units in flight read under. */
  get units(): AbortSignal {
    return this.controller.signal;
  }

  /** The first signal arrived: said at once (never silent), and the units' time starts running. */
  start(signal: InterruptSignal): void {
    if (this.timer !== undefined || this.controller.signal.aborted) return;
    const commitMs = unitGraceMs(this.graceMs);
    // Both numbers, named as the docs name them: the grace (the option) and the part of it units may use.
    this.log.warn(
      `${signal}: stopping: no new units; units in flight may commit for ${formatDuration(commitMs)}, then are abandoned; the run exits within its grace of ${formatDuration(this.graceMs)} (limits.interrupt_grace_s; a second signal exits at once)`,
    );
    this.timer = setTimeout(() => {
      this.log.warn(
        `${signal}: units still in flight after ${formatDuration(commitMs)}: abandoning them; nothing of them is committed`,
      );
      this.controller.abort(
        new SluiceError(`abandoned: ${signal} arrived and the unit did not commit within its grace`, {
          hint: 'run the same command again: the unit is read again',
        }),
      );
    }, commitMs);
  }

  /** The run is over: nothing may still be waiting on the units' signal. */
  end(): void {
    clearTimeout(this.timer);
    if (!this.controller.signal.aborted) this.controller.abort(new SluiceError('the run ended'));
  }
}
