/**
 * What one attempt of `sluice run` holds — its interrupt handling, the state directory's lock, the run history's
 * open line, the dead-letter file, the service connection (an embedded emulator), the components, the outputs'
 * locks, the opened sinks, the progress display — and their release, in one place.
 *
 * Each resource is held as it is acquired; `close()` releases them in the reverse order, each exactly once, however
 * the attempt ends (success, failure, interrupt), and whatever a release throws: the sinks close before their
 * outputs' locks are released (a DuckDB file is checkpointed on close), the outcome is written to runs.jsonl before
 * the state's lock is released (the next run must not find this attempt `running` and call it crashed). A release
 * that fails only warns, unless it is `fatal` (the dead-letter file: letters may be lost): then it fails the run if
 * nothing else did; the run's own failure is never replaced by a cleanup's.
 *
 * The session's `signal` is aborted by an interrupt (`RunOptions.signal`: planning and waits stop, no new unit
 * starts) and when it closes (anything left waiting stops); units in flight read under `units`, which an interrupt
 * aborts only once its grace is spent (interrupt.ts).
 */
import type { InterruptedError } from '../core/errors.js';
import type { Logger } from '../core/types.js';
import { errorText } from '../core/error-text.js';
import type { UnitCounts } from '../unit/run-units.js';
import { InterruptGrace, interrupted, interruptSignalOf } from './interrupt.js';

/** How a release that throws is taken: warned about, failing the run (`fatal`), or ignored (best effort). */
export type ReleaseFailure = 'warn' | 'fatal' | 'ignore';

/** Given the attempt's failure so far (undefined: none), so a release can record the outcome. */
export type Release = (failure: unknown) => void | Promise<void>;

interface Held {
  /** Said in front of a failed release's warning: `closing sink`, `releasing the lock …`. */
  what: string;
  release: Release;
  onFailure: ReleaseFailure;
}

export class RunSession {
  private readonly held: Held[] = [];
  private readonly stopped = new AbortController();
  private readonly grace: InterruptGrace;
  private closing: Promise<unknown> | undefined;
  private readonly onInterrupt = (): void => {
    this.grace.start(interruptSignalOf(this.interrupt!));
    this.stopped.abort();
  };

  constructor(
    private readonly log: Logger,
    private readonly interrupt: AbortSignal | undefined,
    graceMs: number,
  ) {
    this.grace = new InterruptGrace(graceMs, log);
    if (interrupt?.aborted) this.stopped.abort();
    interrupt?.addEventListener('abort', this.onInterrupt, { once: true });
  }

  /** Aborted by an interrupt and when the session closes. */
  get signal(): AbortSignal {
    return this.stopped.signal;
  }

  /** What units in flight read under: aborted once an interrupt's grace is spent, or when the session closes. */
  get units(): AbortSignal {
    return this.grace.units;
  }

  get interrupted(): boolean {
    return this.interrupt?.aborted === true;
  }

  /** The error an interrupted attempt ends in, with the units it got through. */
  interruption(units: UnitCounts): InterruptedError {
    return interrupted(this.interrupt!, units);
  }

  /** Holds what was just acquired until the session closes; returns it. */
  hold<T>(
    what: string,
    resource: T,
    release: (r: T, failure: unknown) => void | Promise<void>,
    on?: ReleaseFailure,
  ): T {
    this.defer(what, (failure) => release(resource, failure), on);
    return resource;
  }

  /** Something to do when the session closes, after everything held later is released. */
  defer(what: string, release: Release, onFailure: ReleaseFailure = 'warn'): void {
    if (this.closing) throw new Error(`${what}: the run session is already closed`);
    this.held.push({ what, release, onFailure });
  }

  /**
   * Releases everything, last held first, once (a second call returns the first's outcome). Returns the attempt's
   * failure: `failure` itself, else the first fatal release's error.
   */
  close(failure: unknown): Promise<unknown> {
    this.closing ??= this.releaseAll(failure);
    return this.closing;
  }

  private async releaseAll(failure: unknown): Promise<unknown> {
    this.interrupt?.removeEventListener('abort', this.onInterrupt);
    this.stopped.abort();
    this.grace.end();
    let outcome = failure;
    for (const held of this.held.splice(0).reverse()) {
      try {
        await held.release(outcome);
      } catch (err) {
        if (held.onFailure === 'ignore') continue;
        // A fatal release fails a run that had not failed; after the run's own failure it is told, not lost.
        if (held.onFailure === 'fatal' && outcome === undefined) outcome = err;
        else this.log.warn(`${held.what}: ${errorText(err)}`);
      }
    }
    return outcome;
  }
}
