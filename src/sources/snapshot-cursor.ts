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
import { compareCursor, cursorKind, readCursorValue, typedCursorValue, type CursorValue } from './cursor-value.js';
import type { SnapshotConfig } from './snapshot-schema.js';

/** A part's checkpoint: the largest cursor value among its records (and the window, for a backfill's part). */
export interface CursorCheckpoint {
  cursor: string;
  max: CursorValue;
  backfill?: { from: CursorValue; to?: CursorValue };
}

export { compareCursor };

/**
 * The largest value of `cursor` among the committed checkpoints of nightly runs, extended by the backfills whose
 * window starts at or below it (or below `initial` when no nightly run loaded anything); undefined when none counts.
 * Values are read as the cursor's kind (`initial`'s, else each value's own: cursor-value.ts) and come back canonical;
 * one that does not read (stored by an earlier sluice, which took `2025-02-30` as typed) does not count, and is
 * handed to `unreadable`.
 */
export function lastCursorValue(
  checkpoints: ReadonlyMap<string, unknown> | undefined,
  cursor: string,
  accepts: (value: CursorValue) => boolean = () => true,
  initial?: CursorValue,
  unreadable?: (value: unknown, problem: string) => void,
): CursorValue | undefined {
  const read = (v: unknown): CursorValue | undefined => {
    const kind =
      initial !== undefined ? cursorKind(initial) : typeof v === 'number' ? 'integer' : cursorKind(String(v));
    const r = readCursorValue(v, kind);
    if (!('problem' in r)) return r.value;
    unreadable?.(v, r.problem);
    return undefined;
  };
  let last: CursorValue | undefined;
  const windows: { from: CursorValue; max: CursorValue }[] = [];
  for (const cp of checkpoints?.values() ?? []) {
    const c = cp as Partial<CursorCheckpoint> | null;
    if (c?.cursor !== cursor || c.max === undefined) continue;
    const max = read(c.max);
    if (max === undefined || !accepts(max)) continue;
    if (c.backfill !== undefined) {
      const from = c.backfill?.from === undefined ? undefined : read(c.backfill.from);
      if (from !== undefined) windows.push({ from, max });
      continue;
    }
    if (last === undefined || compareCursor(max, last) > 0) last = max;
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
  const of = { field: inc.cursor, initial: inc.initial };
  const from = typedCursorValue(raw.from, of, '--from');
  const to = raw.to === undefined ? undefined : typedCursorValue(raw.to, of, '--to');
  if (to !== undefined && compareCursor(to, from) <= 0)
    throw refused(
      `--to ${JSON.stringify(to)} is not after --from ${JSON.stringify(from)}: the window would be empty`,
      `the backfill loads the ${inc.cursor} values after --from up to --to included: give a --to later than --from`,
    );
  return { of: inc.cursor, from, ...(to !== undefined && { to }) };
}
