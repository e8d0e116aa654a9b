/**
 * Shards as a first-class mode: `sluice prepare` starts the pipeline's paid job once, and the shards
 * (`sluice run --shard i/n`) download their share of it instead of each paying for its own.
 *
 * Prepare runs the source's own `plan()` unsharded, so the paid job is started, checkpointed and waited for exactly
 * as an unsharded run does it (a killed prepare resumes its job, never pays twice). What the plan left in its state
 * (the saved job, an incremental filter's fixed cursor, enrichments done) is the prepared record: written to the
 * pipeline's state directory (`prepared.json`) and next to every file output (output-files/shared-state.ts), where
 * shards on other machines find it. A shard seeds its own state with it, so the source finds "a job started
 * earlier" and reuses it.
 *
 * Every shard of one prepared job runs under the prepare's id as its run id: the output holds one logical run,
 * committed units are recognised by whichever attempt of a shard comes next, and a shard run again after it
 * completed commits nothing twice.
 */
import { readFile, writeFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { SharedOutput, SharedStateStore } from '../contracts/component.js';
import { errorText } from '../core/error-text.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { PaidJobRecord } from '../core/paid-work.js';
import { PRIVATE_FILE } from '../core/private-files.js';
import type { Logger, StateStore } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { findDef } from '../pipeline/registry.js';
import { refuseShardedReplaceSinks, sinkConfigs } from '../runtime/components.js';
import { withRuntime } from '../runtime/runtime.js';
import type { PipelinePaths, ShardId } from '../state/paths.js';
import { PaidLedger } from '../state/paid-ledger.js';
import { newRunId } from '../state/run-id.js';
import { FileStateStore } from '../state/state-store.js';
import type { RunHooks } from './run-hooks.js';
import { newRunCounters } from './summary.js';

export const PREPARED_FILE = 'prepared.json';

/** What `sluice prepare` leaves for the shards. */
export interface PreparedJob {
  /** The prepare's id: every shard of it runs under this run id. */
  id: string;
  pipeline: string;
  preparedAt: string;
  /** Shards the prepare was told to expect (`--shards`); completion falls back to the shards that ran. */
  shards?: number;
  /** Units the source planned (all shards together). */
  units: number;
  paidJobs: PaidJobRecord[];
  /** State entries the shards' states are seeded with: the saved job and whatever the source fixed with it. */
  state: Record<string, unknown>;
}

export interface PrepareOptions {
  shards?: number;
  /** Start a new paid job even if the last prepare did not finish (its job is abandoned). */
  fresh?: boolean;
  command?: string;
  waitForLockMs?: number;
  signal?: AbortSignal;
}

export interface PrepareResult {
  prepared: PreparedJob;
  /** Whether the last prepare's job was reused (it was killed before it finished). */
  resumed: boolean;
  /** Where the record was written: the state directory's file and each output's state object. */
  written: string[];
}

/** The prepare's own state (its paid job's checkpoint), kept apart from the unsharded runs' `state.json`. */
function prepareStateFile(paths: PipelinePaths): string {
  return path.join(paths.rootStateDir, 'prepare-state.json');
}

export function preparePipeline(
  p: LoadedPipeline,
  opts: PrepareOptions,
  hooks: Pick<RunHooks, 'log' | 'onService'> & { log: Logger },
): Promise<PrepareResult> {
  const log = hooks.log;
  // Before the paid job: no sink can take `replace` from shards (core/sharded-replace.ts).
  refuseShardedReplaceSinks(p.config, { index: 0, count: opts.shards ?? 2 });
  const runtime = {
    command: opts.command ?? 'sluice prepare',
    log,
    // Its 429s count in the budget of the shards that start right after it.
    budgetMember: 'prepare',
    ...(opts.waitForLockMs !== undefined && { waitForLockMs: opts.waitForLockMs }),
    ...(opts.signal && { signal: opts.signal }),
    ...(hooks.onService && { onService: hooks.onService }),
  };
  return withRuntime(p, runtime, async (rt) => {
    // The unsharded runs' lock: a prepare and a run of the pipeline never start a paid job side by side.
    await rt.lockPipeline();
    const state = await FileStateStore.open(prepareStateFile(rt.paths));
    const last = state.get<string>('run:id');
    const resumed = !opts.fresh && last !== undefined && state.get('run:complete') !== true;
    if (!resumed) {
      await state.clear();
      await state.set('run:id', newRunId(new Date(), last));
    }
    const id = state.get<string>('run:id')!;
    log.info(`${resumed ? 'resuming the prepare' : 'preparing'} ${p.name} (${id})`);
    // The source's own plan, unsharded: the paid job is started, checkpointed and waited for as a run does it.
    // The prepare's own ledger, in its own state: the job it pays for is listed in the prepared record.
    const ledger = PaidLedger.open(state, 1);
    const ctx = rt.sourceContext({ state, paid: ledger, counters: newRunCounters() });
    await rt.source.preflight?.(ctx);
    const units = await rt.source.plan(ctx);
    const prepared: PreparedJob = {
      id,
      pipeline: p.name,
      preparedAt: new Date().toISOString(),
      ...(opts.shards !== undefined && { shards: opts.shards }),
      units: units.length,
      paidJobs: ledger.jobs(),
      state: Object.fromEntries(state.keys().flatMap((k) => (k.startsWith('run:') ? [] : [[k, state.get(k)]]))),
    };
    const written = await writePrepared(p, rt.paths, prepared);
    await state.set('run:complete', true);
    return { prepared, resumed, written };
  });
}

/** The record in the state directory, then next to each file output; any that cannot be written fails the prepare. */
async function writePrepared(p: LoadedPipeline, paths: PipelinePaths, prepared: PreparedJob): Promise<string[]> {
  const text = JSON.stringify(prepared, null, 1) + '\n';
  const file = path.join(paths.rootStateDir, PREPARED_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, text, { mode: PRIVATE_FILE });
  await rename(tmp, file);
  const written = [file];
  for (const store of sharedStores(p)) {
    await store.write(text).catch((err: unknown) => {
      throw new SluiceError(`cannot write the prepared job's record ${store.location}: ${errorText(err)}`, {
        hint: 'give the user running sluice write access to the output, then run `sluice prepare` again (the paid job is reused)',
        cause: err,
      });
    });
    written.push(store.location);
  }
  return written;
}

/** The outputs the pipeline's shards share: those of sinks whose definition says so (a file sink's directory). */
export function sharedOutputs(p: LoadedPipeline): SharedOutput[] {
  return sinkConfigs(p.config).flatMap((c) => {
    const shared = findDef('sink', c.type).sharedOutput?.(c, p.baseDir);
    return shared ? [shared] : [];
  });
}

/** The prepared job's records next to the pipeline's shared outputs. */
function sharedStores(p: LoadedPipeline): SharedStateStore[] {
  return sharedOutputs(p).map((o) => o.prepared);
}

/**
 * The newest prepared record a shard can see: the state directory's, or one next to an output (pods on other
 * machines share the output, not the state directory). Undefined when the pipeline was never prepared.
 */
export async function findPrepared(p: LoadedPipeline, paths: PipelinePaths): Promise<PreparedJob | undefined> {
  const own = path.join(paths.rootStateDir, PREPARED_FILE);
  const texts: [string, string | undefined][] = [[own, await readIfExists(own)]];
  for (const store of sharedStores(p)) {
    // An output out of reach has no record for this shard; one that refuses its record (a link out of it) says so.
    const text = await store.read().catch((err: unknown) => {
      if (err instanceof SluiceError && err.exitCode === EXIT_CODES.config) throw err;
      return undefined;
    });
    texts.push([store.location, text]);
  }
  const found = texts.flatMap(([where, t]) => {
    const parsed = t === undefined ? undefined : parsePrepared(t, where);
    return parsed && parsed.pipeline === p.name ? [parsed] : [];
  });
  return found.sort((a, b) => b.preparedAt.localeCompare(a.preparedAt))[0];
}

function parsePrepared(text: string, where: string): PreparedJob | undefined {
  let r: Partial<PreparedJob>;
  try {
    r = (JSON.parse(text) ?? {}) as Partial<PreparedJob>;
  } catch {
    return undefined;
  }
  if (typeof r.id !== 'string' || typeof r.pipeline !== 'string' || typeof r.preparedAt !== 'string') return undefined;
  // The count names the shards' state directories and manifests: a count, or the record is refused.
  if (r.shards !== undefined && !(Number.isSafeInteger(r.shards) && r.shards >= 1))
    throw new SluiceError(`${where}: shards ${JSON.stringify(r.shards)} is not a number of shards`, {
      hint: 'sluice prepare writes this record itself: something else changed it. Run `sluice prepare` again, or remove the file',
      exitCode: EXIT_CODES.config,
    });
  return { paidJobs: [], units: 0, state: {}, ...r } as PreparedJob;
}

async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** A shard's state gets the prepared job: the source then reuses it (and, sharded, never starts one of its own). */
export async function seedPrepared(
  state: StateStore,
  prepared: PreparedJob,
  shard: ShardId,
  log: Logger,
): Promise<void> {
  for (const [k, v] of Object.entries(prepared.state)) await state.set(k, v);
  const jobs = prepared.paidJobs.map((j) => `${j.kind} ${j.id}`).join(', ');
  log.info(
    `shard ${shard.index}/${shard.count} of the job prepared ${prepared.preparedAt} (${prepared.id}${jobs ? `: ${jobs}` : ''})`,
  );
}
