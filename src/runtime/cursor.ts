/**
 * Where the next run starts: the one answer `run`, `plan`, `state` and `report` all ask for.
 *
 * What a source remembers between runs (a cursor value, the files seen) lives in the sinks, committed with the unit
 * whose rows advanced it, never beside them — so a crash can leave the cursor behind the data (the unit is read
 * again) but never ahead of it. The next run counts the checkpoints of the units EVERY sink committed (with several
 * sinks the cursor advances only as far as the slowest one, so a sink that failed mid-run gets its units again), with
 * the changes made by hand (`sluice state set/reset`: state/cursor-base.ts) applied over them.
 */
import type { Sink } from '../core/types.js';
import { readCursorBase, rebase } from '../state/cursor-base.js';

/** Sinks see `<run>/<unit>` (unit/run-units.ts); sources know the unit by what follows the run id. */
export function sourceUnitId(sinkUnitId: string): string {
  const slash = sinkUnitId.indexOf('/');
  return slash < 0 ? sinkUnitId : sinkUnitId.slice(slash + 1);
}

function runOf(sinkUnitId: string): string {
  const slash = sinkUnitId.indexOf('/');
  return slash < 0 ? '' : sinkUnitId.slice(0, slash);
}

/** One unit's committed checkpoint. */
export interface CommittedCheckpoint {
  /** The unit's id as the source planned it. */
  unit: string;
  /** The run that committed it ('' for a unit id without one). */
  run: string;
  checkpoint: unknown;
}

/**
 * A sink's checkpoints (or those every sink committed: `everywhere`), oldest run first (run ids sort by start time:
 * state/run-id.ts); units of one run in the order the sink listed them.
 */
export function committedList(
  perSink: readonly ReadonlyMap<string, unknown>[],
  everywhere = true,
): CommittedCheckpoint[] {
  const [first, ...rest] = perSink;
  if (first === undefined) return [];
  const ids = [...first.keys()].filter((id) => !everywhere || rest.every((m) => m.has(id)));
  // A stable sort.
  ids.sort((a, b) => {
    const ra = runOf(a);
    const rb = runOf(b);
    return ra < rb ? -1 : ra > rb ? 1 : 0;
  });
  return ids.map((id) => ({ unit: sourceUnitId(id), run: runOf(id), checkpoint: first.get(id) }));
}

/**
 * Checkpoints by source unit id. A unit id that several runs committed (tonight's page 1, a unit read again after
 * `--reset-cursor`) keeps the latest run's, and the map lists older runs first, so a source that folds it in order
 * ends on the newest. `exceptRun`: a resumed run plans from the cursor its first attempt started from — what it
 * committed itself is skipped as committed, not planned away.
 */
export function checkpointsOf(list: readonly CommittedCheckpoint[], exceptRun?: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const c of list) {
    if (c.run === exceptRun) continue;
    // Re-inserting moves the key to the end: iteration order stays "oldest run first" for the kept value too.
    out.delete(c.unit);
    out.set(c.unit, c.checkpoint);
  }
  return out;
}

/** Where the next run starts, read from open sinks and the state directory. */
export interface NextStart {
  /** What the next run's `plan()` is given (`SourceContext.checkpoints`): every sink's, hand changes applied. */
  checkpoints: Map<string, unknown>;
  /** The same, as a list: the units every sink committed, oldest run first. */
  effective: CommittedCheckpoint[];
  /** Each sink's own checkpoints by sink unit id, hand changes applied (same order as the sinks). */
  perSink: Map<string, unknown>[];
  /** Cursor changes made by hand that apply (state/cursor-base.ts). */
  changes: number;
}

/** Reads where the next run starts from `sinks` (opened) and the pipeline's state directory. */
export async function readNextStart(
  sinks: readonly Sink[],
  rootStateDir: string,
  opts: { exceptRun?: string } = {},
): Promise<NextStart> {
  const entries = await readCursorBase(rootStateDir);
  const perSink = rebase(await Promise.all(sinks.map((s) => s.committedCheckpoints())), entries);
  const effective = committedList(perSink);
  return { checkpoints: checkpointsOf(effective, opts.exceptRun), effective, perSink, changes: entries.length };
}
