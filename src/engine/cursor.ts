/**
 * Cursor state of incremental loads: what a source remembers between runs (a cursor value, the files seen) lives in
 * the sinks, committed with the unit whose rows advanced it, never beside them — so a crash can leave the cursor
 * behind the data (the unit is read again) but never ahead of it.
 *
 * Going in, each attempt at a unit hands the sinks a `UnitCommit` with its rows (`checkpointedRead`): its
 * `checkpoint()` is the source's `unitCheckpoint` as it was once this attempt's read drained, asked for by each sink
 * when it commits.
 * Coming out, before `plan()`, it gives the source the checkpoints of the units EVERY sink committed: with several
 * sinks the cursor advances only as far as the slowest one, so a sink that failed mid-run gets its units again.
 */
import { CheckpointNotFinal, knownCheckpoint, NO_CHECKPOINT } from '../core/checkpoint.js';
import { SluiceError, EXIT_CODES } from '../core/errors.js';
import type { Batch, Logger, Sink, Source, SourceContext, UnitCommit, WorkUnit } from '../core/types.js';
import { rebase, type CursorBaseEntry } from './cursor-base.js';

/** A source that hands over unit checkpoints keeps a cursor; one that does not loads everything every run. */
export function isIncremental(source: Source): boolean {
  return source.unitCheckpoint !== undefined;
}

/** Sinks see `<run>/<unit>` (stages/schedule.ts); sources know the unit by what follows the run id. */
export function sourceUnitId(sinkUnitId: string): string {
  const slash = sinkUnitId.indexOf('/');
  return slash < 0 ? sinkUnitId : sinkUnitId.slice(slash + 1);
}

function runOf(sinkUnitId: string): string {
  const slash = sinkUnitId.indexOf('/');
  return slash < 0 ? '' : sinkUnitId.slice(0, slash);
}

/** Sink lines (`describe()`), for the error that names the sink. */
interface Described {
  describe(): string;
}

/** The sink cannot keep cursor state: the run would load the same data again every night, so it does not start. */
export function noCursorSink(sink: Described): SluiceError {
  return new SluiceError(`sink ${sink.describe()} does not store cursor state, and the source loads incrementally`, {
    hint:
      'load into a sink that commits checkpoints with its data, or set `incremental: false` on the source ' +
      '(every run then loads everything)',
    exitCode: EXIT_CODES.config,
  });
}

/** Each sink's committed checkpoints, by sink unit id (same order as `sinks`). */
export async function sinkCheckpoints(sinks: readonly Sink[]): Promise<Map<string, unknown>[]> {
  const missing = sinks.find((s) => s.committedCheckpoints === undefined);
  if (missing) throw noCursorSink(missing);
  return Promise.all(sinks.map((s) => s.committedCheckpoints!()));
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
 * stages/open-state.ts); units of one run in the order the sink listed them.
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
 * The checkpoints every sink committed, by source unit id. A unit id that several runs committed (tonight's page 1,
 * a unit read again after `--reset-cursor`) keeps the latest run's, and the map lists older runs first, so a source
 * that folds it in order ends on the newest.
 */
export function effectiveCheckpoints(
  perSink: readonly ReadonlyMap<string, unknown>[],
  exceptRun?: string,
): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const c of committedList(perSink)) {
    if (c.run === exceptRun) continue;
    // Re-inserting moves the key to the end: iteration order stays "oldest run first" for the kept value too.
    out.delete(c.unit);
    out.set(c.unit, c.checkpoint);
  }
  return out;
}

export interface CursorOptions {
  /** `--reset-cursor` / `--fresh`: start from the source's initial cursor. */
  reset: boolean;
  /**
   * This run's id. A resumed run plans from the cursor its first attempt started from: what it committed itself is
   * skipped as committed (stages/schedule.ts), not planned away, and a crawl does not take its own first pages for
   * an earlier night's.
   */
  runId?: string;
  /** Cursor changes made by hand (`sluice state set/reset`, cursor-base.ts), applied to the sinks' checkpoints. */
  base?: readonly CursorBaseEntry[];
  log?: Logger;
}

/**
 * `SourceContext.checkpoints` for a run: undefined for a source that keeps no cursor; empty when reset. A sink
 * that cannot store checkpoints fails the run before anything is read (exit 2), reset or not: its units would
 * never carry one.
 */
export async function cursorForRun(
  source: Source,
  sinks: readonly Sink[],
  opts: CursorOptions,
): Promise<ReadonlyMap<string, unknown> | undefined> {
  if (!isIncremental(source)) return undefined;
  const missing = sinks.find((s) => s.committedCheckpoints === undefined);
  if (missing) throw noCursorSink(missing);
  if (opts.reset) {
    opts.log?.info('cursor reset: the source starts from its initial cursor');
    return new Map();
  }
  const cursor = effectiveCheckpoints(rebase(await sinkCheckpoints(sinks), opts.base ?? []), opts.runId);
  opts.log?.info(
    cursor.size === 0
      ? 'cursor: no checkpoint that every sink committed in an earlier run: the source starts from its initial cursor'
      : `cursor: ${cursor.size} unit(s) committed by every sink in earlier runs`,
  );
  return cursor;
}

/** One attempt at a unit: the source as the attempt reads it, and what the sinks commit with its rows. */
export interface CheckpointedRead {
  source: Source;
  commit: UnitCommit;
}

/**
 * One attempt at `u`: the source to read it from, and the `UnitCommit` the sinks store with its rows. When the
 * checkpoint depends on the rows, it is taken once the read is drained (after the last batch, before the sinks see
 * the end of the stream), `checkpoint()` throws `CheckpointNotFinal` until then, and the raw-file path is off (the
 * engine would not see the rows); otherwise it is known before the attempt. Each attempt has its own: one cut
 * short never hands over an earlier attempt's value.
 */
export function checkpointedRead(source: Source, u: WorkUnit): CheckpointedRead {
  const checkpointOf = source.unitCheckpoint?.bind(source);
  if (checkpointOf === undefined) return { source, commit: NO_CHECKPOINT };
  if (source.checkpointFromRows !== true) return { source, commit: knownCheckpoint(checkpointOf(u)) };
  let final: { value: unknown } | undefined;
  const view: Source = {
    plan: (ctx) => source.plan(ctx),
    read: (unit, ctx) => drained(source.read(unit, ctx), () => (final = { value: checkpointOf(unit) })),
    ...(source.concurrency !== undefined && { concurrency: source.concurrency }),
    checkpointFromRows: true,
    unitCheckpoint: (unit) => checkpointOf(unit),
  };
  if (source.discover) view.discover = (unit, ctx: SourceContext) => source.discover!(unit, ctx);
  const commit: UnitCommit = {
    checkpoint: () => {
      if (final === undefined) throw new CheckpointNotFinal(u.id);
      return final.value;
    },
  };
  return { source: view, commit };
}

async function* drained(batches: AsyncIterable<Batch>, onDrained: () => void): AsyncIterable<Batch> {
  yield* batches;
  onDrained();
}
