/**
 * `sluice dead-letters`: list a pipeline's dead letters, and replay them through the (fixed) pipeline.
 *
 * What a replay does: each letter's `raw` text is parsed as one JSON object and enters the pipeline where it was
 * rejected — a decode letter goes through every transform, a transform's letter re-enters at that transform. So a
 * fix in the pipeline (a `cast` made lenient, a field renamed) makes the same records pass; a record that is itself
 * broken is fixed by editing the letter's `raw` in the dead-letter file, then replayed.
 *
 * Exactly once: the letters to replay are fixed first (`replay/pending.json`), and their replay is one run with an
 * id derived from them, whose units (the letters of one original unit and transform) are committed by the sinks
 * like any unit. The letters are marked replayed after the run completed; a replay interrupted at any point is
 * finished by the next `--replay` with the same letters and the same run id, so the sinks skip what it committed.
 *
 * `write: replace` sinks are appended to: the replayed records join the table or generation the last run wrote,
 * instead of a new generation holding only them. Only that run's letters are replayed there; older runs' output
 * was replaced, and their records with it.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_FILE } from '../core/private-files.js';
import { readJsonFile } from '../core/json-file.js';
import { SluiceError } from '../core/errors.js';
import type { Batch, DeadLetter, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { ComponentConfig } from '../pipeline/schema.js';
import { sinkConfigs } from '../runtime/components.js';
import { createLogger } from '../runtime/logger.js';
import { withRuntime } from '../runtime/runtime.js';
import {
  deadLetterKey,
  readDeadLetters,
  type LetterContext,
  type StoredDeadLetter,
} from '../state/dead-letter-file.js';
import { pipelinePaths, type ShardId } from '../state/paths.js';
import { FileStateStore } from '../state/state-store.js';
import type { RunOptions, RunSummary } from './api.js';
import type { RunHooks } from './run-hooks.js';
import { runPipeline } from './run.js';

export type { StoredDeadLetter } from '../state/dead-letter-file.js';

/** A shard's letters are its own: written, listed and replayed under the shard's state directory. */
function replayDir(p: LoadedPipeline, shard?: ShardId): string {
  return path.join(pipelinePaths(p, shard).stateDir, 'replay');
}

function replayedFile(p: LoadedPipeline, shard?: ShardId): string {
  return path.join(pipelinePaths(p, shard).stateDir, 'dead-letters.replayed.json');
}

function pendingFile(p: LoadedPipeline, shard?: ShardId): string {
  return path.join(replayDir(p, shard), 'pending.json');
}

async function readReplayState<T>(file: string): Promise<T | undefined> {
  const damaged = (err: Error): SluiceError =>
    new SluiceError(`cannot read ${file}: ${err.message}`, {
      hint: 'the file is sluice state that got damaged: restore it, or delete it (replayed letters would be listed again)',
      cause: err,
    });
  return readJsonFile<T>(file, { unreadable: damaged, invalid: damaged, absentIsNone: true });
}

/** Temp file, fsync, rename: a crash leaves the old content or the new, which is what the ordering above needs. */
async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w', PRIVATE_FILE);
  try {
    await fh.writeFile(JSON.stringify(value));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}

async function replayedKeys(p: LoadedPipeline, shard?: ShardId): Promise<Set<string>> {
  return new Set((await readReplayState<string[]>(replayedFile(p, shard))) ?? []);
}

/** Dead letters not yet replayed successfully (of shard `shard` of a sharded run). */
export async function listDeadLetters(p: LoadedPipeline, shard?: ShardId): Promise<StoredDeadLetter[]> {
  const done = await replayedKeys(p, shard);
  return (await readDeadLetters(pipelinePaths(p, shard).deadLetterFile)).filter((d) => !done.has(deadLetterKey(d)));
}

interface PendingReplay {
  /** Names the replay run: the same letters always replay under the same run id. */
  id: string;
  letters: StoredDeadLetter[];
}

interface ReplayUnitParams {
  /** The transform the unit's letters re-enter at. */
  step: number;
}

/** Unit param of a replay unit: the pipeline run its letters came from. */
const ORIGIN_RUN = 'replay_of_run';

/**
 * The pipeline run a letter's record belongs to: its own run, or for a letter written by a replay, the run of the
 * letter replayed (kept in the unit params, which the replay's letters carry).
 */
function mainRunOf(d: StoredDeadLetter): string {
  const origin = d.unit_params?.[ORIGIN_RUN];
  return typeof origin === 'string' ? origin : d.run;
}

/** A sink's letter holds a row that passed every transform. */
function isSinkLetter(d: StoredDeadLetter): boolean {
  return d.stage.startsWith('sink:');
}

/**
 * A `discard_value` letter of a schema contract holds the value taken out, not a row: the row itself was stored
 * without it, so there is nothing to load again.
 */
function holdsValueOnly(d: StoredDeadLetter): boolean {
  return isSinkLetter(d) && d.reason.startsWith('value discarded by schema_contract');
}

/** The transform a letter re-enters at: the one that rejected it; a sink's letter after the last transform. */
function entryStep(d: StoredDeadLetter, transforms: number): number {
  return d.step ?? (isSinkLetter(d) ? transforms : 0);
}

/** The letters' raw text as records again; ones that still do not parse become dead letters of the replay. */
function replaySource(letters: StoredDeadLetter[], concurrency: number, transforms: number): Source {
  const groups = new Map<string, StoredDeadLetter[]>();
  for (const d of letters) {
    // Crawl unit ids repeat every run: the run keeps tonight's page apart from last night's.
    const k = JSON.stringify([mainRunOf(d), d.unit, entryStep(d, transforms)]);
    groups.set(k, [...(groups.get(k) ?? []), d]);
  }
  // Letters stay out of the unit's params: transforms see the params, and their letters copy them.
  const lettersOf = new Map<string, StoredDeadLetter[]>();
  const units: WorkUnit[] = [...groups.values()].map((ds) => {
    const id = `replay:${createHash('sha256').update(ds.map(deadLetterKey).join('\n')).digest('hex').slice(0, 20)}`;
    lettersOf.set(id, ds);
    // The original unit's params come back too: normalizers read query, page and fetch time from them.
    const d = ds[0]!;
    const params = {
      ...(d.unit_params ?? {}),
      replay_of: d.unit,
      [ORIGIN_RUN]: mainRunOf(d),
      step: entryStep(d, transforms),
    };
    return { id, params };
  });
  return {
    concurrency,
    incremental: false,
    plan: async () => units,
    async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
      const rows: Batch = [];
      for (const d of lettersOf.get(unit.id) ?? []) {
        try {
          if (d.truncated)
            throw new Error(`the letter holds only the first ${d.raw?.length ?? 0} characters of the record`);
          const v = JSON.parse(d.raw ?? '') as unknown;
          if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
          rows.push(v as Record<string, unknown>);
        } catch (err) {
          // Where it was rejected comes along (the engine's letter file keeps these fields), so its next replay
          // enters at the same transform, and letters without an offset stay apart by their ordinal.
          const again: DeadLetter & LetterContext = {
            unit: d.unit,
            ...(d.offset !== undefined && { offset: d.offset }),
            ...(d.step !== undefined && { step: d.step }),
            ...(d.index !== undefined && { index: d.index }),
            unit_params: { ...(d.unit_params ?? {}), [ORIGIN_RUN]: mainRunOf(d) },
            stage: `replay:${d.stage}`,
            reason: `still invalid on replay: ${(err as Error).message}`,
            ...(d.raw !== undefined && { raw: d.raw }),
          };
          ctx.deadLetter(again);
        }
      }
      if (rows.length) yield rows;
    },
  };
}

/** A transform's letters re-enter at the transform that rejected them: it must still be there. */
function checkSteps(p: LoadedPipeline, letters: StoredDeadLetter[]): void {
  const transforms = (p.config.transforms ?? []) as { type: string }[];
  for (const d of letters) {
    if (d.step === undefined) continue;
    const type = /^transform:([^:]+)/.exec(d.stage)?.[1];
    const now = transforms[d.step]?.type;
    if (now !== undefined && (type === undefined || type === now)) continue;
    throw new SluiceError(
      `dead letters of transforms[${d.step}] (${type ?? d.stage}) cannot be replayed: transforms[${d.step}] is now ${now ?? 'gone'}`,
      {
        hint: 'a letter re-enters the pipeline at the transform that rejected it: keep the transforms in the order they had when the letters were written (fix their options, not their order), then replay',
      },
    );
  }
}

export interface ReplayResult {
  /** Undefined when there was nothing to replay. */
  summary?: RunSummary;
  replayed: number;
  /** Letters of earlier runs that `write: replace` sinks have replaced: not replayed. */
  superseded: number;
  /** `discard_value` letters (a value, not a row): listed, never replayed. */
  valuesOnly: number;
}

export function replayDeadLetters(
  p: LoadedPipeline,
  opts: RunOptions,
  hooks: Pick<RunHooks, 'log' | 'afterCommit'> = {},
): Promise<ReplayResult> {
  const log = hooks.log ?? createLogger({ format: opts.logFormat, level: opts.quiet ? 'warn' : 'info' });
  const runtime = {
    command: opts.command ?? 'sluice dead-letters --replay',
    log,
    noService: true,
    ...(opts.shard && { shard: opts.shard }),
    ...(opts.waitForLockMs !== undefined && { waitForLockMs: opts.waitForLockMs }),
    ...(opts.signal && { signal: opts.signal }),
  };
  return withRuntime(p, runtime, async (rt) => {
    // The pipeline's own lock, not only the replay's state (which the replay's run locks): a run of the pipeline
    // must not start while its letters are replayed, nor a replay while it runs (the check below reads its state).
    await rt.lockPipeline();
    return replayLocked(p, opts, { ...hooks, log });
  });
}

async function replayLocked(
  p: LoadedPipeline,
  opts: RunOptions,
  hooks: Pick<RunHooks, 'log' | 'afterCommit'>,
): Promise<ReplayResult> {
  const sinks = sinkConfigs(p.config);
  const replaces = sinks.some((s) => s.write === 'replace');
  const shard = opts.shard;
  const main = await FileStateStore.open(pipelinePaths(p, shard).stateFile);
  const lastRun = main.get<string>('run:id');
  if (lastRun !== undefined && main.get('run:complete') !== true)
    throw new SluiceError(`the last run of ${p.name} (${lastRun}) has not finished`, {
      hint:
        `finish it first (\`sluice run ${path.relative(process.cwd(), p.file) || p.file}\` resumes it), then replay: ` +
        'units it has not committed will read their records again, and a replay now could load them twice',
    });

  let pending = await readReplayState<PendingReplay>(pendingFile(p, shard));
  // An unfinished replay into `replace` sinks that a later run has replaced since: its records went with the old
  // output, and its letters are not the current run's.
  if (pending && replaces && pending.letters.some((d) => mainRunOf(d) !== lastRun)) {
    await rm(pendingFile(p, shard), { force: true });
    pending = undefined;
  }
  let superseded = 0;
  let valuesOnly = 0;
  if (!pending) {
    let letters = await listDeadLetters(p, shard);
    valuesOnly = letters.filter(holdsValueOnly).length;
    letters = letters.filter((d) => !holdsValueOnly(d));
    if (replaces) {
      const current = letters.filter((d) => mainRunOf(d) === lastRun);
      superseded = letters.length - current.length;
      letters = current;
    }
    const ofOneSink = [...new Set(letters.filter(isSinkLetter).map((d) => d.stage))];
    if (ofOneSink.length > 0 && sinks.length > 1)
      throw new SluiceError(
        `${p.name}'s dead letters include rows one of its ${sinks.length} sinks refused (${ofOneSink.join(', ')}): ` +
          'a replay would load them into every sink, and the others hold them already',
        {
          hint:
            'replay them through a copy of the pipeline (same name, next to it) whose `sinks:` keeps only that sink; ' +
            'the other letters replay with this pipeline once those are done',
        },
      );
    if (letters.length === 0) return { replayed: 0, superseded, valuesOnly };
    pending = {
      id: createHash('sha256').update(letters.map(deadLetterKey).join('\n')).digest('hex').slice(0, 16),
      letters,
    };
    await writeJsonAtomic(pendingFile(p, shard), pending);
  }
  checkSteps(p, pending.letters);

  const replayPipeline: LoadedPipeline = {
    ...p,
    config: {
      ...p.config,
      state_dir: replayDir(p, shard),
      // New rejections are written beside the originals, so they are listed (and replayable) too.
      dead_letter: pipelinePaths(p, shard).deadLetterFile,
      // Replace sinks take the records into what the last run wrote, not into a generation of their own.
      ...(p.config.sinks ? { sinks: sinks.map(appendInstead) } : { sink: appendInstead(sinks[0]!) }),
    },
  };
  // Not as a shard: the letters are already the shard's own, and a shard's plan would drop the replay units whose
  // ids hash into other shards. The replay has its own state (under the shard's) and holds the shard's lock.
  const { shard: _ownLetters, ...runOpts } = opts;
  const summary = await runPipeline(
    replayPipeline,
    { ...runOpts, fresh: false },
    {
      ...hooks,
      // Letters are read as the pipeline's own source reads units: at its concurrency.
      source: replaySource(pending.letters, sourceConcurrency(p), (p.config.transforms ?? []).length),
      runId: `replay-${pending.id}`,
      firstTransform: (u) => (u.params as unknown as ReplayUnitParams).step,
    },
  );
  const done = await replayedKeys(p, shard);
  for (const d of pending.letters) done.add(deadLetterKey(d));
  await writeJsonAtomic(replayedFile(p, shard), [...done]);
  await rm(pendingFile(p, shard), { force: true });
  return { summary, replayed: pending.letters.length, superseded, valuesOnly };
}

function appendInstead(sink: ComponentConfig): ComponentConfig {
  return sink.write === 'replace' ? { ...sink, write: 'append' } : sink;
}

/** The concurrency the pipeline's source is configured with, where its config has one (else the common default). */
function sourceConcurrency(p: LoadedPipeline): number {
  const c = (p.config.source as { concurrency?: unknown }).concurrency;
  return typeof c === 'number' ? c : 4;
}
