/**
 * A pipeline's cursor state read and changed by hand (`sluice state`, `state set/reset/drop`), always under the
 * pipeline's run lock and the outputs' locks (taken by the runtime without waiting): a run in progress makes each of
 * them exit 3 naming the holder, and no run starts half-way through a change.
 *
 * `set` and `reset` write no sink: they add an entry to the pipeline's cursor changes (cursor-base.ts), which every
 * later run applies to the checkpoints the sinks committed. `drop` removes a sink's table or files together with the
 * checkpoints stored beside them (`Sink.drop`). Each change is recorded in the run history (state-changes.ts).
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { Logger } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { committedList, type CommittedCheckpoint } from '../runtime/cursor.js';
import { PipelineRuntime, withRuntime } from '../runtime/runtime.js';
import { cursorToSet } from '../sources/cursor-bound.js';
import { lastCursorValue } from '../sources/snapshot.js';
import { addCursorBase, type CursorBaseEntry } from '../state/cursor-base.js';
import { runHistoryFile } from '../state/run-history.js';
import { newRunId } from '../state/run-id.js';
import { recordStateChange, type StateChange } from '../state/state-changes.js';
import { FileStateStore } from '../state/state-store.js';

export interface StateTarget {
  pipeline: LoadedPipeline;
  log: Logger;
  /** Written into the locks for whoever finds them taken, and into the history. */
  command: string;
}

/** A cursor that is one value: `incremental: {cursor, initial}` (the snapshot source's). */
interface CursorField {
  field: string;
  initial: string | number;
  maxAheadS: number;
}

export interface SinkState {
  /** 1-based, the order of `sinks:`. */
  index: number;
  sink: string;
  /** The newest cursor value this sink committed (sources whose cursor is one value). */
  cursor?: string | number;
  checkpoints: CommittedCheckpoint[];
}

export interface CursorState {
  pipeline: string;
  source: string;
  incremental: boolean;
  /** The cursor's field and initial value, for sources whose cursor is one value. */
  field?: string;
  initial?: string | number;
  /** What the next run starts from: the newest value every sink committed (absent: the initial value). */
  cursor?: string | number;
  /** The units every sink committed, counted by the next run, oldest run first. */
  effective: CommittedCheckpoint[];
  sinks: SinkState[];
  /** Cursor changes made by hand that the runs apply (cursor-base.ts). */
  changes: number;
}

function cursorField(p: LoadedPipeline): CursorField | undefined {
  const inc = (p.config.source as { incremental?: unknown }).incremental as
    { cursor?: unknown; initial?: unknown; max_ahead_s?: unknown } | undefined;
  if (typeof inc !== 'object' || inc === null || typeof inc.cursor !== 'string') return undefined;
  if (typeof inc.initial !== 'string' && typeof inc.initial !== 'number') return undefined;
  return {
    field: inc.cursor,
    initial: inc.initial,
    maxAheadS: typeof inc.max_ahead_s === 'number' ? inc.max_ahead_s : 86_400,
  };
}

/**
 * `fn` with the pipeline's runtime (no service: nothing here calls it), its lock and the outputs' locks held and the
 * sinks open as a resumed run opens them (nothing dropped); everything released when `fn` ends.
 */
function locked<T>(t: StateTarget, fn: (rt: PipelineRuntime) => Promise<T>): Promise<T> {
  return withRuntime(t.pipeline, { command: t.command, log: t.log, noService: true }, async (rt) => {
    await rt.lockPipeline();
    await rt.openOutputs({ fresh: false });
    return fn(rt);
  });
}

function noCursor(rt: PipelineRuntime): SluiceError {
  return new SluiceError(`the ${rt.sourceType} source of ${rt.pipeline.name} keeps no cursor (not incremental)`, {
    hint: 'every run loads everything: there is no cursor to set or reset (`sluice state drop` still removes a sink’s output)',
    exitCode: EXIT_CODES.config,
  });
}

/** The state as the next run would count it (runtime/cursor.ts, the run's own answer), read while the locks are held. */
async function stateNow(rt: PipelineRuntime): Promise<CursorState> {
  const f = cursorField(rt.pipeline);
  const base = {
    pipeline: rt.pipeline.name,
    source: rt.sourceType,
    incremental: rt.source.incremental,
    ...(f && { field: f.field, initial: f.initial }),
  };
  const next = await rt.nextStart();
  if (next === undefined) return { ...base, effective: [], sinks: [], changes: 0 };
  const valueOf = (m: ReadonlyMap<string, unknown>): string | number | undefined => f && lastCursorValue(m, f.field);
  const cursor = valueOf(new Map(next.effective.map((c) => [`${c.run}/${c.unit}`, c.checkpoint])));
  return {
    ...base,
    ...(cursor !== undefined && { cursor }),
    effective: next.effective,
    sinks: rt.sinkList.map((s, i) => {
      const own = valueOf(next.perSink[i]!);
      return {
        index: i + 1,
        sink: s.describe(),
        ...(own !== undefined && { cursor: own }),
        checkpoints: committedList([next.perSink[i]!], false),
      };
    }),
    changes: next.changes,
  };
}

/**
 * `sluice state`, `sluice report`: where the next run starts, per source and per sink. Under the locks with the sinks
 * open, also for a source that keeps no cursor: opening an output settles what a crash left in it (an interrupted
 * compaction), so no command leaves a reader seeing it longer than the next one that opens the output.
 */
export function readState(t: StateTarget): Promise<CursorState> {
  return locked(t, stateNow);
}

/** `--sink`: a 1-based index, a sink type that only one sink has, or text only one sink's description holds. */
function selectSink(rt: PipelineRuntime, which: string): number {
  const sinks = rt.sinks.map((s) => ({ type: s.config.type, sink: s.sink }));
  const listed = sinks.map((s, i) => `${i + 1}: ${s.sink.describe()}`).join('; ');
  const fail = (why: string): never => {
    throw new SluiceError(`--sink ${which}: ${why}`, {
      hint: `name a sink by its number, its type or part of its description: ${listed}`,
      exitCode: EXIT_CODES.config,
    });
  };
  if (/^\d+$/.test(which)) {
    const n = Number(which);
    if (n < 1 || n > sinks.length) fail(`the pipeline has ${sinks.length} sink(s), numbered from 1`);
    return n - 1;
  }
  const byType = sinks.flatMap((s, i) => (s.type === which ? [i] : []));
  if (byType.length === 1) return byType[0]!;
  const byText = sinks.flatMap((s, i) => (s.sink.describe().includes(which) ? [i] : []));
  if (byText.length === 1) return byText[0]!;
  return fail(byType.length + byText.length === 0 ? 'no sink matches' : 'more than one sink matches');
}

/**
 * A mark every earlier run's id sorts below (the lock is held: no run starts meanwhile). `taken()` records it as
 * the last run's id, completed, when no unfinished run is waiting to resume: the next run's id is made to sort
 * after it (state/run-id.ts `newRunId`) even if the clock went back meanwhile.
 */
async function sinceMark(rt: PipelineRuntime): Promise<{ since: string; unfinished?: string; taken(): Promise<void> }> {
  const state = await FileStateStore.open(rt.paths.stateFile);
  const last = state.get<string>('run:id');
  const unfinished = last !== undefined && state.get('run:complete') !== true ? last : undefined;
  const since = newRunId(new Date(), last);
  const taken = async (): Promise<void> => {
    if (unfinished !== undefined) return;
    await state.set('run:id', since);
    await state.set('run:complete', true);
  };
  return { since, taken, ...(unfinished !== undefined && { unfinished }) };
}

export interface Change {
  record: StateChange;
  /** What the user should know beyond the change (an unfinished run that the next run resumes). */
  notes: string[];
}

async function change(
  rt: PipelineRuntime,
  command: string,
  entry: Omit<CursorBaseEntry, 'since'> | undefined,
  rec: (since: string) => Promise<Omit<StateChange, 'at' | 'by' | 'pid' | 'pipeline' | 'command'>>,
): Promise<Change> {
  const { since, unfinished, taken } = await sinceMark(rt);
  const what = await rec(since);
  if (entry) {
    await addCursorBase(rt.paths.rootStateDir, { since, ...entry });
    await taken();
  }
  const record = await recordStateChange(runHistoryFile(rt.paths.stateDir), {
    ...what,
    pipeline: rt.pipeline.name,
    command,
  });
  const notes =
    unfinished === undefined
      ? []
      : [
          `the last run (${unfinished}) did not complete: the next \`sluice run\` resumes it from the cursor it ` +
            'started with; the change applies to the runs after it (or at once with `sluice run --fresh`)',
        ];
  return { record, notes };
}

/** `sluice state set --cursor`: the next run starts after `text` (validated against the cursor's type). */
export function setCursor(t: StateTarget, text: string): Promise<Change> {
  return locked(t, async (rt) => {
    if (!rt.source.incremental) throw noCursor(rt);
    const f = cursorField(t.pipeline);
    if (f === undefined)
      throw new SluiceError(`the ${rt.sourceType} source's cursor is the units it has loaded, not one value`, {
        hint: '`sluice state reset` forgets them (the next run loads everything again); `sluice state --units` lists them',
        exitCode: EXIT_CODES.config,
      });
    const value = cursorToSet(text, f);
    const before = (await stateNow(rt)).cursor ?? f.initial;
    return change(rt, t.command, { checkpoints: { 'state-set': { cursor: f.field, max: value } } }, async () => ({
      kind: 'state-set',
      what: `cursor on ${f.field} set to ${JSON.stringify(value)} (was ${JSON.stringify(before)}): the next run loads records with ${f.field} > ${JSON.stringify(value)}`,
      sinks: rt.sinkList.map((s) => s.describe()),
      cursor: { field: f.field, value, before },
    }));
  });
}

/** Asked before a change is made, with what it would do; throws to refuse (the CLI: `--yes`, or a prompt). */
export type Confirm = (would: string) => Promise<void>;

/**
 * `sluice state reset [--sink]`: the sinks' committed checkpoints no longer count; the next run starts over. `which`:
 * a sink as `--sink` names it; absent: every sink.
 */
export function resetCursor(t: StateTarget, which: string | undefined, confirm: Confirm): Promise<Change> {
  return withRuntime(t.pipeline, { command: t.command, log: t.log, noService: true }, async (rt) => {
    if (!rt.source.incremental) throw noCursor(rt);
    const sinks = rt.sinkList;
    const sink = which === undefined ? undefined : selectSink(rt, which);
    const chosen = sink === undefined ? sinks : [sinks[sink]!];
    const named = sink === undefined ? 'every sink' : `sink ${sink + 1} (${chosen[0]!.describe()})`;
    await confirm(`would forget the checkpoints ${named} committed, so the next run starts from the initial cursor`);
    await rt.lockPipeline();
    await rt.openOutputs({ fresh: false });
    return change(rt, t.command, sink === undefined ? {} : { sinks: [sink] }, async () => ({
      kind: 'state-reset',
      what:
        `forgot the checkpoints ${sink === undefined ? 'every sink' : `sink ${sink + 1}`} committed: ` +
        'the next run starts from the initial cursor' +
        (sink !== undefined && sinks.length > 1 ? ' (the cursor is what every sink committed)' : ''),
      sinks: chosen.map((s) => s.describe()),
    }));
  });
}

/** `sluice state drop --sink`: the sink's table or files and its checkpoints, together. */
export function dropSink(t: StateTarget, which: string, confirm: Confirm): Promise<Change> {
  return withRuntime(t.pipeline, { command: t.command, log: t.log, noService: true }, async (rt) => {
    const sink = selectSink(rt, which);
    const s = rt.sinkList[sink]!;
    await confirm(`would remove ${s.describe()} (its table or files) and its committed checkpoints`);
    await rt.lockPipeline();
    await rt.openOutputs({ fresh: false });
    // A cursor set by hand counts for every sink: the dropped one must start over all the same.
    return change(rt, t.command, rt.source.incremental ? { sinks: [sink] } : undefined, async () => {
      const removed = await s.drop();
      return {
        kind: 'state-drop',
        what: `dropped ${removed.join(' and ')}: the next run loads it again from the initial cursor`,
        sinks: [s.describe()],
        removed,
      };
    });
  });
}
