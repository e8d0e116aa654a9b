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
import { readdir, readFile, writeFile, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { pipelineLimits } from '../pipeline/limits-schema.js';
import type { ComponentDeps } from '../contracts/component.js';
import { PRIVATE_FILE } from '../core/private-files.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { Logger, SourceContext, StateStore } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { SharedOutput, SharedStateStore } from '../contracts/component.js';
import { findDef } from '../pipeline/registry.js';
import { buildComponents, refuseShardedReplaceSinks, sinkConfigs } from './components.js';
import { errorText } from './error-text.js';
import { pipelinePaths, shardDirName, type PipelinePaths, type ShardId } from './paths.js';
import { acquireRunLock } from './run-lock.js';
import { paidJobsOf, readRunHistory, runHistoryFile, type PaidJobRecord, type RunStatus } from './run-history.js';
import { ServiceConnection } from './service.js';
import { newRunId } from './stages/open-state.js';
import { FileStateStore } from './state-store.js';
import { newRunCounters } from './summary.js';
import type { RunHooks } from './run-hooks.js';
import { readJsonFile } from '../core/json-file.js';

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

export async function preparePipeline(
  p: LoadedPipeline,
  opts: PrepareOptions,
  hooks: Pick<RunHooks, 'log' | 'onService'> & { log: Logger },
): Promise<PrepareResult> {
  const log = hooks.log;
  // Before the paid job: no sink can take `replace` from shards (core/sharded-replace.ts).
  refuseShardedReplaceSinks(p.config, { index: 0, count: opts.shards ?? 2 });
  const paths = pipelinePaths(p);
  await mkdir(paths.rootStateDir, { recursive: true });
  // The unsharded runs' lock: a prepare and a run of the pipeline never start a paid job side by side.
  const lock = await acquireRunLock(paths.lockFile, {
    command: opts.command ?? 'sluice prepare',
    log,
    waitMs: opts.waitForLockMs ?? 0,
    ...(opts.signal && { signal: opts.signal }),
  });
  const service = new ServiceConnection(p.config.service, p.baseDir, log, newRunCounters(), {
    emulatorStateFile: path.join(paths.rootStateDir, 'emulator.json'),
    limits: pipelineLimits(p.config.limits),
  });
  try {
    const state = await FileStateStore.open(prepareStateFile(paths));
    const last = state.get<string>('run:id');
    const resumed = !opts.fresh && last !== undefined && state.get('run:complete') !== true;
    if (!resumed) {
      await state.clear();
      await state.set('run:id', newRunId(new Date(), last));
    }
    const id = state.get<string>('run:id')!;
    log.info(`${resumed ? 'resuming the prepare' : 'preparing'} ${p.name} (${id})`);
    hooks.onService?.(service);
    const deps: ComponentDeps = { log, baseDir: p.baseDir, client: () => service.get() };
    const built = buildComponents(p.config, deps);
    const sctx: SourceContext = {
      signal: opts.signal ?? new AbortController().signal,
      log,
      state,
      counters: newRunCounters(),
      deadLetter: () => undefined,
      baseDir: p.baseDir,
      now: () => service.now(),
      dryRun: false,
      sharded: false,
    };
    let units;
    try {
      await built.source.preflight?.(sctx);
      units = await built.source.plan(sctx);
    } finally {
      await built.source.close?.().catch(() => undefined);
    }
    const prepared: PreparedJob = {
      id,
      pipeline: p.name,
      preparedAt: new Date().toISOString(),
      ...(opts.shards !== undefined && { shards: opts.shards }),
      units: units.length,
      paidJobs: paidJobsOf(state),
      state: Object.fromEntries(state.keys().flatMap((k) => (k.startsWith('run:') ? [] : [[k, state.get(k)]]))),
    };
    const written = await writePrepared(p, paths, prepared);
    await state.set('run:complete', true);
    return { prepared, resumed, written };
  } finally {
    await service.close();
    await lock.release();
  }
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
function sharedOutputs(p: LoadedPipeline): SharedOutput[] {
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

export interface ShardStatus {
  shard: ShardId;
  /** Every unit of the shard is committed under the prepared run. */
  committed: boolean;
  /** The shard's last attempt under the prepared run, if any. */
  last?: { status: RunStatus; cause?: string; endedAt?: string };
}

export interface Completion {
  prepared: PreparedJob;
  count: number;
  shards: ShardStatus[];
  missing: ShardId[];
}

/**
 * Whether every shard of the prepared job has committed. The count is `count`, else the prepare's `--shards`, else
 * the largest count any shard of this job ran with.
 */
export async function shardCompletion(p: LoadedPipeline, count?: number): Promise<Completion> {
  const paths = pipelinePaths(p);
  const prepared = await findPrepared(p, paths);
  if (!prepared)
    throw new SluiceError(`${p.name} has no prepared job: nothing to finalize`, {
      hint: `run \`sluice prepare ${path.relative(process.cwd(), p.file)}\` first, then the shards`,
      exitCode: EXIT_CODES.config,
    });
  const n = count ?? prepared.shards ?? (await countOfShardsThatRan(paths.rootStateDir, prepared.id));
  if (n === undefined)
    throw new SluiceError(`no shard of the job prepared ${prepared.preparedAt} (${prepared.id}) has run yet`, {
      hint: 'start the shards (`sluice run <pipeline> --shard i/n`), or pass --shard-count N to name how many there are',
    });
  const shards: ShardStatus[] = [];
  for (let index = 0; index < n; index++) {
    const shard = { index, count: n };
    const sp = pipelinePaths(p, shard);
    const state = await readJson(sp.stateFile);
    const mine = state?.['run:id'] === prepared.id;
    const history = (await readRunHistory(runHistoryFile(sp.stateDir))).filter((r) => r.run === prepared.id);
    const last = history.at(-1);
    shards.push({
      shard,
      committed: mine && state?.['run:complete'] === true,
      ...(last && {
        last: {
          // A `running` attempt whose process is gone reads as `crashed` (run-history.ts).
          status: last.status,
          ...(last.cause !== undefined && { cause: last.cause }),
          ...(last.endedAt !== undefined && { endedAt: last.endedAt }),
        },
      }),
    });
  }
  return { prepared, count: n, shards, missing: shards.filter((s) => !s.committed).map((s) => s.shard) };
}

/** What `_sluice_shards.json` holds: the manifests of a complete sharded load, for readers that follow manifests. */
export interface ShardsRecord {
  version: 1;
  pipeline: string;
  /** The prepared job the shards loaded. */
  prepared: string;
  shards: number;
  /** Every shard's manifest, relative to the output's path: a reader takes the union of their units' files. */
  manifests: string[];
  completed_at: string;
}

/**
 * Once every shard has committed: `_sluice_shards.json` next to each file output (local or `s3://`), naming the
 * shards' manifests. Written only by `sluice finalize` of a complete set, so its presence for the newest prepared
 * job tells a reader the output is whole. Returns where it was written.
 */
export async function writeShardsRecord(p: LoadedPipeline, c: Completion): Promise<string[]> {
  if (c.missing.length > 0) return [];
  const record: ShardsRecord = {
    version: 1,
    pipeline: p.name,
    prepared: c.prepared.id,
    shards: c.count,
    manifests: [],
    completed_at: new Date().toISOString(),
  };
  const written: string[] = [];
  const outputs = sharedOutputs(p);
  // What the record will name is checked in every output before any record is written.
  for (const output of outputs) await output.checkShards?.(c.shards.map((s) => s.shard));
  for (const output of outputs) {
    const store = output.shardsRecord;
    const manifests = c.shards.map((s) => output.manifestName(s.shard));
    await store.write(`${JSON.stringify({ ...record, manifests }, null, 1)}\n`).catch((err: unknown) => {
      throw new SluiceError(`cannot write ${store.location}: ${errorText(err)}`, {
        hint: 'give the user running sluice write access to the output, then run `sluice finalize` again',
        cause: err,
      });
    });
    written.push(store.location);
  }
  return written;
}

async function countOfShardsThatRan(root: string, preparedId: string): Promise<number | undefined> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return undefined;
  }
  let n: number | undefined;
  for (const name of names) {
    const m = /^shard-(\d+)-of-(\d+)$/.exec(name);
    if (!m) continue;
    const state = await readJson(path.join(root, name, 'state.json'));
    if (state?.['run:id'] === preparedId) n = Math.max(n ?? 0, Number(m[2]));
  }
  return n;
}

/** A shard's state file, absent or half-written read as none. */
function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  return readJsonFile<Record<string, unknown>>(file, {
    absentIsNone: true,
    unreadable: (e) => e,
    invalid: () => undefined,
  });
}

/** One line per shard, for `sluice finalize` and `sluice runs`. */
export function formatCompletion(c: Completion): string {
  const done = c.shards.filter((s) => s.committed).length;
  const lines = [
    `prepared ${c.prepared.preparedAt} (${c.prepared.id}): ${done}/${c.count} shard(s) committed${
      c.missing.length === 0 ? ' — complete' : ''
    }`,
  ];
  for (const s of c.shards) {
    const what = s.committed
      ? 'committed'
      : s.last
        ? `${s.last.status}${s.last.cause ? `: ${s.last.cause}` : ''}`
        : 'not started';
    lines.push(`  shard ${shardDirName(s.shard).replace(/^shard-(\d+)-of-(\d+)$/, '$1/$2')}  ${what}`);
  }
  return lines.join('\n');
}
