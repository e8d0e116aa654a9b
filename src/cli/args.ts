/** Parsers for option values; what they throw becomes a usage error naming the option. */
import { parseDuration } from '../core/duration.js';
import { UsageError } from './report.js';

/** `--shard 2/8` → the third of eight deterministic shards. */
export function parseShard(text: string): { index: number; count: number } {
  const m = /^(\d+)\/(\d+)$/.exec(String(text).trim());
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || count < 1 || index >= count)
    throw new Error(`--shard must be i/n with 0 ≤ i < n, e.g. 0/4 (got "${text}")`);
  return { index, count };
}

export function positiveInt(name: string) {
  return (value: unknown): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1 (got "${String(value)}")`);
    return n;
  };
}

/** A JSON value given on the command line. */
export function jsonArg(name: string) {
  return (text: unknown): unknown => {
    try {
      return JSON.parse(String(text));
    } catch (err) {
      throw new Error(`--${name} is not valid JSON: ${(err as Error).message}`);
    }
  };
}

/** Repeatable options may also be given comma- or space-separated: `--ips 1.1.1.1,2.2.2.2`. */
export function listArg(values: unknown): string[] {
  const list = Array.isArray(values) ? values : [values];
  return list.flatMap((v) => String(v).split(/[\s,]+/)).filter(Boolean);
}

/** How long `--wait` alone waits for another run's lock: a nightly job that overran by an hour is not normal. */
export const DEFAULT_LOCK_WAIT = '1h';

/**
 * `--wait` (DEFAULT_LOCK_WAIT) or `--wait=<duration>`. An option whose value is optional swallows the next word, so a
 * word that is not a duration is most likely the pipeline file written after `--wait`.
 */
export function lockWait(value: unknown): number {
  const text = value === true || value === '' ? DEFAULT_LOCK_WAIT : String(value);
  const ms = parseDuration(text);
  if (!Number.isFinite(ms))
    throw new Error(
      `--wait takes a duration such as 90s, 10m or 1h (got "${text}"): write --wait=10m, or put --wait after the pipeline file`,
    );
  return ms;
}

/**
 * Refuses an option given an empty value (`--sink ""`, `--sink=`) and an empty argument, for every option of every
 * command at once (before any option's own parser). On a command line written with variables that is an unset one
 * (`--sink "$SINK"`), and taken as a value it does harm: `""` is part of every sink's description, so it picked the
 * only sink to drop; an empty duration meant the default wait. `parsed`: what yargs read from `argv`, which tells an
 * option's empty value from an empty argument after an option that takes none (`--yes ""`).
 */
export function refuseEmptyValues(argv: readonly string[], parsed: Record<string, unknown>): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const inline = /^(--?[^=\s]+)=$/.exec(arg);
    if (inline !== null) throw emptyValue(inline[1]!);
    if (arg !== '') continue;
    const before = argv[i - 1];
    if (before !== undefined && /^--?[^=\s]+$/.test(before)) {
      const name = before.replace(/^--?/, '');
      // A flag (true, or false for `--no-…`) took no value: the empty text after it is an argument of its own.
      if (typeof (parsed[name] ?? parsed[name.replace(/^no-/, '')]) !== 'boolean') throw emptyValue(before);
    }
    throw new UsageError(
      `an argument is empty${before !== undefined ? ` (after ${before})` : ''}: an unset variable?`,
      'give the argument a value, or leave it out',
    );
  }
}
function emptyValue(option: string): UsageError {
  return new UsageError(
    `${option} is given an empty value: an unset variable?`,
    `give ${option} a value, or leave the option out for its default`,
  );
}
