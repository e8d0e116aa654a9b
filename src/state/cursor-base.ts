/**
 * Cursor changes made by hand (`sluice state set` / `sluice state reset`), kept beside the run history in
 * `<state_dir>/cursor-base.json` rather than written into the sinks: the sinks keep committing checkpoints with their
 * rows exactly as before, and a change by hand only decides which of those earlier checkpoints the next run counts.
 *
 * Each entry has a `since` mark that sorts like a run id (state/run-id.ts `newRunId`) and is taken while no run
 * holds the pipeline's lock, so every run that committed before it has an id below it and every later run one above
 * it. Applying an entry to the sinks' checkpoints (`rebase`):
 * - the checkpoints committed before `since` (into the sinks it names, or all) are no longer counted: the source
 *   starts from its initial cursor as far as they are concerned (`reset`);
 * - its own checkpoints (`set`: one `{cursor, max}` holding the value set) are counted as if every sink had committed
 *   them in a run numbered `since`.
 * A run after the change commits under a larger id: its checkpoints count on top of the entry's, so the cursor goes
 * on from the value set as soon as a run loads past it. Entries apply oldest first: a reset after a set forgets the set.
 */
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { PRIVATE_FILE } from '../core/private-files.js';
import { readTextIfPresent } from '../core/json-file.js';

export interface CursorBaseEntry {
  /** A run-id-like mark: checkpoints of runs with a smaller id, in the sinks below, are not counted. */
  since: string;
  /** Indexes into the pipeline's sinks whose earlier checkpoints are forgotten; absent: all of them. */
  sinks?: number[];
  /** Checkpoints that stand in for the forgotten ones (by source unit id), as if every sink had committed them. */
  checkpoints?: Record<string, unknown>;
}

export function cursorBaseFile(stateDir: string): string {
  return path.join(stateDir, 'cursor-base.json');
}

/** The entries, oldest first; none when nothing was changed by hand. */
export async function readCursorBase(stateDir: string): Promise<CursorBaseEntry[]> {
  const file = cursorBaseFile(stateDir);
  const text = await readTextIfPresent(file);
  if (text === undefined) return [];
  try {
    const parsed = JSON.parse(text) as { entries?: CursorBaseEntry[] };
    if (!Array.isArray(parsed.entries)) throw new Error('no `entries` list');
    return parsed.entries;
  } catch (err) {
    throw new SluiceError(`the cursor changes in ${file} cannot be read: ${(err as Error).message}`, {
      hint: 'it was changed outside sluice: delete it to count every checkpoint the sinks committed, then set the cursor again with `sluice state set`',
      cause: err,
    });
  }
}

/** Adds an entry (written atomically: a crash leaves the old list or the new one). */
export async function addCursorBase(stateDir: string, entry: CursorBaseEntry): Promise<void> {
  const entries = [...(await readCursorBase(stateDir)), entry];
  const file = cursorBaseFile(stateDir);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ entries }, null, 1) + '\n', { mode: PRIVATE_FILE });
  await rename(tmp, file);
}

function runOf(sinkUnitId: string): string {
  const slash = sinkUnitId.indexOf('/');
  return slash < 0 ? '' : sinkUnitId.slice(0, slash);
}

/**
 * The sinks' checkpoints (by sink unit id `<run>/<unit>`, one map per sink) as the cursor counts them once the
 * entries are applied: forgotten ones removed, the entries' own added to every sink under `<since>/<unit>`.
 */
export function rebase(
  perSink: readonly ReadonlyMap<string, unknown>[],
  entries: readonly CursorBaseEntry[],
): Map<string, unknown>[] {
  const out = perSink.map((m) => new Map(m));
  for (const e of entries) {
    out.forEach((m, i) => {
      if (e.sinks !== undefined && !e.sinks.includes(i)) return;
      for (const id of [...m.keys()]) if (runOf(id) <= e.since) m.delete(id);
    });
    for (const [unit, checkpoint] of Object.entries(e.checkpoints ?? {}))
      for (const m of out) m.set(`${e.since}/${unit}`, checkpoint);
  }
  return out;
}
