/**
 * Errors a user sees. Every one says what went wrong and what to do about it (`hint`); the CLI prints
 * `error: <message>` then `  fix: <hint>` and exits with the error's `exitCode`.
 */

/**
 * The process exit codes, for cron and scripts that must tell "try again later" from "fix the pipeline". The
 * README's table of exit codes is checked against this constant by a test: change both together.
 */
export const EXIT_CODES = {
  /** The run completed. */
  success: 0,
  /** Anything else went wrong (the service, the network, a sink, a bug): see the message. */
  failure: 1,
  /** The pipeline file or the command line is wrong: rerunning will not help until it is fixed. */
  config: 2,
  /** Another run of the pipeline (or of one sharing an output) holds the lock: try later, or pass --wait. */
  locked: 3,
  /** The run stopped because more records were dead-lettered than the pipeline allows (`max_dead_letters`). */
  failureBudget: 4,
  /**
   * The data no longer fits a sink's table under `schema_contract: freeze`: rerunning gives the same, until someone
   * decides (evolve the table, or transform the data). Nothing of the refused unit was committed there.
   */
  schemaContract: 5,
  /**
   * A check marked `error` (a sink's `checks:`) failed after the load. The run's data is committed; the data (or the
   * check) needs a look before anyone relies on it.
   */
  checks: 6,
  /** Interrupted by SIGINT (Ctrl-C): 128 + 2, as shells report it. Committed units are kept. */
  sigint: 130,
  /** Interrupted by SIGTERM (a scheduler stopping the job): 128 + 15. Committed units are kept. */
  sigterm: 143,
} as const;

export class SluiceError extends Error {
  readonly hint?: string;
  /** What the process exits with when this error ends it (EXIT_CODES). */
  readonly exitCode: number;
  constructor(message: string, opts: { hint?: string; cause?: unknown; exitCode?: number } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SluiceError';
    this.hint = opts.hint;
    this.exitCode = opts.exitCode ?? EXIT_CODES.failure;
  }
}

/** A pipeline file problem, positioned at file:line:column. */
export class ConfigError extends SluiceError {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  constructor(file: string, line: number, column: number, message: string, hint?: string) {
    super(`${file}:${line}:${column}: ${message}`, { hint, exitCode: EXIT_CODES.config });
    this.name = 'ConfigError';
    this.file = file;
    this.line = line;
    this.column = column;
  }
}

/** Implemented by every error that knows whether trying the same thing again can succeed. */
export interface RetryClassified {
  readonly transient: boolean;
  /** How long the other side asked us to wait (Retry-After), in ms. */
  readonly retryAfterMs?: number;
}

/** A failure that may not happen again: the network, the service being busy or down, bytes that arrived broken. */
export class TransientError extends SluiceError implements RetryClassified {
  readonly transient = true;
  readonly retryAfterMs?: number;
  constructor(message: string, opts: { hint?: string; cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, opts);
    this.name = 'TransientError';
    if (opts.retryAfterMs !== undefined) this.retryAfterMs = opts.retryAfterMs;
  }
}

/**
 * No answer arrived: refused, reset, timed out. `sent` says whether the request may have reached the other side
 * (false only when the connection was never established), which decides whether a paid call may be repeated.
 */
export class NetworkError extends TransientError {
  readonly code?: string;
  readonly sent: boolean;
  constructor(message: string, opts: { code?: string; sent: boolean; cause?: unknown; hint?: string }) {
    super(message, opts);
    this.name = 'NetworkError';
    if (opts.code !== undefined) this.code = opts.code;
    this.sent = opts.sent;
  }
}

/** Input bytes that are truncated or corrupt: names the unit and the byte offset. Downloading again may help. */
export class DecodeError extends TransientError {
  readonly unit: string;
  readonly offset: number;
  constructor(unit: string, offset: number, message: string, cause?: unknown) {
    super(`${unit}: ${message} at byte ${offset}`, {
      hint: 'the input is truncated or corrupt; rerun to download the unit again',
      cause,
    });
    this.name = 'DecodeError';
    this.unit = unit;
    this.offset = offset;
  }
}

/**
 * A sink's native reader will not load this file as a whole (a record its reader rejects, a shape it cannot
 * type). The engine then decodes the same file in JS, where bad records go to dead letters one by one. Only this
 * error means "try the JS path": any other error from a native load fails the unit.
 */
export class NativeLoadRefused extends SluiceError {
  constructor(
    readonly sink: string,
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`${sink} refused to load the file natively: ${reason}`, {
      hint: 'nothing to do: the engine decodes the file in JS instead',
      cause,
    });
    this.name = 'NativeLoadRefused';
  }
}

/** Who holds a run lock, as its lock file says (state/run-lock.ts). */
export interface LockHolder {
  pid: number;
  host: string;
  /** ISO 8601. */
  since: string;
  command: string;
}

/**
 * Another live process holds what this run needs: a pipeline's state or a shared output (a lock file), or a DuckDB
 * database file (DuckDB's own lock). `holder` is known when a sluice lock file names it.
 */
export class LockedError extends SluiceError {
  readonly file: string;
  readonly holder: LockHolder | undefined;
  constructor(message: string, opts: { file: string; holder?: LockHolder; hint: string; cause?: unknown }) {
    super(message, { hint: opts.hint, cause: opts.cause, exitCode: EXIT_CODES.locked });
    this.name = 'LockedError';
    this.file = opts.file;
    this.holder = opts.holder;
  }
}

/** More records were dead-lettered than the pipeline allows: the run stops; committed units stay committed. */
export class FailureBudgetExceeded extends SluiceError {
  constructor(message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...opts, exitCode: EXIT_CODES.failureBudget });
    this.name = 'FailureBudgetExceeded';
  }
}

/** A sink's `checks:` found what an `error` check forbids: the data is committed, the run says it is wrong. */
export class ChecksFailed extends SluiceError {
  constructor(message: string, opts: { hint?: string } = {}) {
    super(message, { ...opts, exitCode: EXIT_CODES.checks });
    this.name = 'ChecksFailed';
  }
}

/**
 * A sink's database refused a query sluice asked to run read-only (`QueryableOutput.query`): more than one
 * statement, a statement that is not a query, a write, or a file or table outside the checked output. The check
 * is reported as refused; nothing it asked for ran.
 */
export class QueryRefused extends SluiceError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, {
      ...opts,
      hint: 'a check is one query that reads its sink’s table (`{table}`) and nothing else',
      exitCode: EXIT_CODES.checks,
    });
    this.name = 'QueryRefused';
  }
}

export type InterruptSignal = 'SIGINT' | 'SIGTERM';

/** The run was stopped by a signal: units in flight were let finish or abandoned, committed units are kept. */
export class InterruptedError extends SluiceError {
  readonly signal: InterruptSignal;
  constructor(signal: InterruptSignal, message: string, opts: { hint?: string } = {}) {
    super(message, { ...opts, exitCode: signal === 'SIGTERM' ? EXIT_CODES.sigterm : EXIT_CODES.sigint });
    this.name = 'InterruptedError';
    this.signal = signal;
  }
}
