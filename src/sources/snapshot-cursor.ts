/**
 * The cursor of an incremental snapshot, and its backfills (`sluice run --from <v> [--to <v>]`).
 *
 * A nightly run filters `<cursor> > <last value loaded>`. A backfill is a run of its own whose filter job selects a
 * window instead, `<cursor> > from AND <cursor> <= to` (under `and` with the configured filter), so it pays for the
 * window only; its rows merge into the same tables.
 *
 * The nightly cursor stays where it was. A backfill's parts commit their checkpoints marked with the window they
 * were loaded for, and `lastCursorValue` counts such a checkpoint only where its window joins what was loaded before
 * it (`from` at or below the cursor): a window in the past never moves the cursor back; one that reaches past the
 * cursor moves it forward to the largest value it loaded (everything up to there is then loaded); one that starts
 * after the cursor leaves it alone, or the records between the cursor and `from` would be skipped for good.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { BackfillWindow } from '../core/types.js';
import { isDateText } from './cursor-bound.js';
import type { SnapshotConfig } from './snapshot-schema.js';

/** A part's checkpoint: the largest cursor value among its records (and the window, for a backfill's part). */
export interface CursorCheckpoint {
  cursor: string;
  max: string | number;
  backfill?: { from: string | number; to?: string | number };
}

/** Cursor values compare as dates when both are date strings, as numbers when both are numbers, else as text. */
export function compareCursor(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const da = typeof a === 'string' ? Date.parse(a) : NaN;
  const db = typeof b === 'string' ? Date.parse(b) : NaN;
  if (!Number.isNaN(da) && !Number.isNaN(db)) return da - db;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

const isValue = (v: unknown): v is string | number => typeof v === 'string' || typeof v === 'number';

/**
 * The largest value of `cursor` among the committed checkpoints of nightly runs, extended by the backfills whose
 * window starts at or below it (or below `initial` when no nightly run loaded anything); undefined when none counts.
 */
export function lastCursorValue(
  checkpoints: ReadonlyMap<string, unknown> | undefined,
  cursor: string,
  accepts: (value: string | number) => boolean = () => true,
  initial?: string | number,
): string | number | undefined {
  let last: string | number | undefined;
  const windows: { from: string | number; max: string | number }[] = [];
  for (const cp of checkpoints?.values() ?? []) {
    const c = cp as Partial<CursorCheckpoint> | null;
    if (c?.cursor !== cursor || !isValue(c.max) || !accepts(c.max)) continue;
    if (c.backfill !== undefined) {
      if (isValue(c.backfill?.from)) windows.push({ from: c.backfill.from, max: c.max });
      continue;
    }
    if (last === undefined || compareCursor(c.max, last) > 0) last = c.max;
  }
  // By `from`: a window that joins the cursor only once an earlier window extended it is counted too.
  windows.sort((a, b) => compareCursor(a.from, b.from));
  for (const w of windows) {
    const reached = last ?? initial;
    if (reached === undefined || compareCursor(w.from, reached) > 0) continue;
    if (last === undefined || compareCursor(w.max, last) > 0) last = w.max;
  }
  return last;
}

function refused(message: string, hint: string): SluiceError {
  return new SluiceError(message, { hint, exitCode: EXIT_CODES.config });
}

/** `ComponentDef.backfill` of the snapshot source: the window, in the cursor's type, or a refusal with the fix. */
export function snapshotBackfill(cfg: SnapshotConfig, raw: { from: string; to?: string }): BackfillWindow {
  const inc = cfg.incremental;
  if (inc === undefined)
    throw refused(
      cfg.snapshot_id !== undefined
        ? `--from: this source downloads the one snapshot source.snapshot_id names; a backfill reloads a window of an incremental cursor`
        : '--from: this snapshot source is not incremental (no `incremental: { cursor }`): there is no cursor to take a window of',
      'add `incremental: { cursor: <field>, initial: <value> }` to the source (and `write: merge` with a `primary_key` on the sink), ' +
        'or run without --from: every run of this source loads all its filter selects',
    );
  const from = cursorValue(inc, raw.from, '--from');
  const to = raw.to === undefined ? undefined : cursorValue(inc, raw.to, '--to');
  if (to !== undefined && compareCursor(to, from) <= 0)
    throw refused(
      `--to ${JSON.stringify(to)} is not after --from ${JSON.stringify(from)}: the window would be empty`,
      `the backfill loads the ${inc.cursor} values after --from up to --to included: give a --to later than --from`,
    );
  return { of: inc.cursor, from, ...(to !== undefined && { to }) };
}

/** A value typed on the command line, as the cursor holds it: a number, a date (sent as ISO 8601), or text. */
function cursorValue(inc: { cursor: string; initial: string | number }, text: string, option: string): string | number {
  const t = text.trim();
  if (typeof inc.initial === 'number') {
    if (t !== '' && Number.isFinite(Number(t))) return Number(t);
    throw refused(
      `${option} ${JSON.stringify(text)} is not a number, and the cursor ${inc.cursor} holds numbers (its initial value is ${inc.initial})`,
      `give ${option} a number, e.g. ${option} ${inc.initial}`,
    );
  }
  if (isDateText(inc.initial)) {
    if (isDateText(t)) return new Date(Date.parse(t)).toISOString();
    throw refused(
      `${option} ${JSON.stringify(text)} is not a date, and the cursor ${inc.cursor} holds dates (its initial value is ${JSON.stringify(inc.initial)})`,
      `give ${option} a date, e.g. ${option} 2025-03-01 or ${option} 2025-03-01T06:00:00Z (UTC unless the value names its zone)`,
    );
  }
  if (t === '')
    throw refused(`${option} is empty`, `give ${option} a value of ${inc.cursor}, e.g. ${JSON.stringify(inc.initial)}`);
  return t;
}
