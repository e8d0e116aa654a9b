/**
 * Text or JSON log lines on stderr (stdout stays for results). Every line passes through `redact`, so an API key
 * cannot leak through a message or a field, whatever code produced it, and is made printable (core/printable.ts):
 * a text line stays one line, whatever data or ids it quotes.
 */
import { printableLine } from '../core/printable.js';
import { redact } from '../core/redact.js';
import type { Logger } from '../core/types.js';

export type LogFormat = 'text' | 'json';
type Level = 'debug' | 'info' | 'warn' | 'error';
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerOptions {
  format: LogFormat;
  /** Lowest level printed. `--quiet` sets warn. */
  level: Level;
  write?: (line: string) => void;
  /** Fields every JSON line carries (the run's identity), read as each line is written. Text lines leave them out. */
  context?: Readonly<Record<string, unknown>>;
}

/** How `withContext` finds a logger's options: only loggers made here can take context fields. */
const OPTIONS = Symbol('sluice.loggerOptions');

export function createLogger(opts: LoggerOptions): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (order[level] < order[opts.level]) return;
    if (opts.format === 'json') {
      write(
        printableLine(
          redact(JSON.stringify({ time: new Date().toISOString(), level, msg, ...opts.context, ...fields })),
        ),
      );
    } else {
      const extra = fields
        ? ' ' +
          Object.entries(fields)
            .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
            .join(' ')
        : '';
      // One line whatever the message quotes: a newline or ESC from data or an id cannot forge another line.
      write(printableLine(redact(`${level === 'info' ? '' : level + ': '}${msg}${extra}`)));
    }
  };
  return Object.assign(
    {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
    } satisfies Logger,
    { [OPTIONS]: opts },
  );
}

/**
 * The same logger with `context` on every JSON line: a run's identity (run id, pipeline, shard), so each line of a
 * log shipped elsewhere says which run wrote it. `context` is read as each line is written: a field set on it later
 * (the run id, once the state is open) appears from then on. A logger not made by createLogger is returned as is.
 */
export function withContext(log: Logger, context: Readonly<Record<string, unknown>>): Logger {
  const opts = (log as { [OPTIONS]?: LoggerOptions })[OPTIONS];
  return opts ? createLogger({ ...opts, context }) : log;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
