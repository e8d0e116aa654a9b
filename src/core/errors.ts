/**
 * Errors a user sees. Every one says what went wrong and what to do about it (`hint`); the CLI prints
 * `error: <message>` then `  fix: <hint>` and exits non-zero.
 */
export class SluiceError extends Error {
  readonly hint?: string;
  constructor(message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SluiceError';
    this.hint = opts.hint;
  }
}

/** A pipeline file problem, positioned at file:line:column. */
export class ConfigError extends SluiceError {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  constructor(file: string, line: number, column: number, message: string, hint?: string) {
    super(`${file}:${line}:${column}: ${message}`, { hint });
    this.name = 'ConfigError';
    this.file = file;
    this.line = line;
    this.column = column;
  }
}

/** Input bytes that are truncated or corrupt: names the unit and the byte offset. */
export class DecodeError extends SluiceError {
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
