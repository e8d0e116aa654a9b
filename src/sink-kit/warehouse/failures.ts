/**
 * How a warehouse sink (Postgres, ClickHouse) hands the engine a failure of its server: one error type per sink,
 * transient when the server or the link failed (core/retry.ts tries those again), its text redacted; a sink's work
 * wrapped once (`guarded`), and its reads outside any unit tried again through a server's restart (`readRetrying`).
 * What differs by server — which failures are transient, how an error's first line is told — each sink says.
 */
import { SluiceError, type RetryClassified } from '../../core/errors.js';
import { redact } from '../../core/redact.js';
import { RetryPolicy, retrying } from '../../core/retry.js';
import { SourceFailure } from './source-failure.js';
import { UNCOMMITTED_HINT } from './unit-result.js';

export interface SinkErrorOptions {
  hint: string;
  cause: unknown;
  transient: boolean;
}

/** A failure of a warehouse sink, typed for core/retry.ts: transient when the server or the link failed. */
export class WarehouseSinkError extends SluiceError implements RetryClassified {
  readonly transient: boolean;
  constructor(message: string, opts: SinkErrorOptions) {
    super(redact(message), { hint: opts.hint, cause: opts.cause });
    this.name = new.target.name;
    this.transient = opts.transient;
  }
}

/** What a sink says of its server's failures. */
export interface ServerFailures<E extends WarehouseSinkError> {
  /** The server or the link failed, not the statement: the same work may succeed when tried again. */
  isTransient(err: unknown): boolean;
  /** The failure's first line, redacted, with what identifies it (a SQLSTATE, a server's code). */
  errorLine(err: unknown): string;
  /** What a unit's work that failed on the link left behind, and what to do. */
  transientHint: string;
  error: new (message: string, opts: SinkErrorOptions) => E;
}

export interface SinkFailures<E extends WarehouseSinkError> {
  /** A failure of the sink's work, typed for retries. */
  sinkFailure(label: string, what: string, err: unknown): E;
  /**
   * Runs `fn`; a failure that is not already a SluiceError becomes one (`sinkFailure`), a source's failure mid-unit
   * is rethrown as the source threw it.
   */
  guarded<T>(label: string, what: string, fn: () => Promise<T>): Promise<T>;
}

export function sinkFailures<E extends WarehouseSinkError>(server: ServerFailures<E>): SinkFailures<E> {
  const sinkFailure = (label: string, what: string, err: unknown): E => {
    const transient = server.isTransient(err);
    return new server.error(`${label}: ${what}: ${server.errorLine(err)}`, {
      hint: transient ? server.transientHint : UNCOMMITTED_HINT,
      cause: err,
      transient,
    });
  };
  return {
    sinkFailure,
    async guarded<T>(label: string, what: string, fn: () => Promise<T>): Promise<T> {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof SourceFailure) throw err.original;
        if (err instanceof SluiceError) throw err;
        throw sinkFailure(label, what, err);
      }
    },
  };
}

/**
 * Waits between reads that failed on the link: the engine's unit policy (unit/run-units.ts), 4 tries with 0.5 s,
 * 1 s, 2 s between them, the time a server takes to come back from a fast restart.
 */
const READ_RETRY = new RetryPolicy({ attempts: 4, baseMs: 500, maxMs: 30_000 });

/**
 * A read the engine makes once per run (committed units, checkpoints, columns), tried again while it fails on the
 * server or the link: right after a restart a pool still holds connections the server closed, and the first query
 * on each fails. Units have the engine's retries; these reads are outside any unit.
 */
export async function readRetrying<T>(read: () => Promise<T>, policy: RetryPolicy = READ_RETRY): Promise<T> {
  return retrying(read, { policy });
}
