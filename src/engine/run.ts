/**
 * The runner: plan units, skip the committed ones, read the rest under a concurrency limit through the transforms
 * into every sink, and let each sink commit a unit atomically with its checkpoint.
 *
 * Exactly-once across crashes comes from three rules: (1) paid job ids are checkpointed in the state file before
 * anyone waits on them; (2) a unit is committed by the sink together with its id, so a rerun skips it; (3) a unit
 * that failed half-way committed nothing, so reading it again from the start loses and duplicates nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import { DecodeError, SluiceError } from '../core/errors.js';
import { failpoint } from '../core/failpoints.js';
import { redact } from '../core/redact.js';
import type {
  Batch,
  ComponentDeps,
  Counters,
  Logger,
  Sink,
  SinkContext,
  Source,
  SourceContext,
  TransformContext,
  WorkUnit,
} from '../core/types.js';
import { decode } from '../decode/index.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { PlanReport, RunOptions, RunSummary } from './api.js';
import { buildComponents, describeSink, sinkConfigs } from './components.js';
import { DeadLetterFile } from './dead-letter-file.js';
import { createLogger } from './logger.js';
import { Progress, formatBytes, formatDuration } from './progress.js';
import { ServiceConnection } from './service.js';
import { FileStateStore, MemoryStateStore } from './state-store.js';
import { tee } from './tee.js';
import { isTransient } from './transient.js';

/** Attempts per unit for transient failures (the client already retried each request). */
const UNIT_ATTEMPTS = 4;

export interface PipelinePaths {
  stateDir: string;
  stateFile: string;
  deadLetterFile: string;
}

export function pipelinePaths(p: LoadedPipeline): PipelinePaths {
  const stateDir = path.resolve(p.baseDir, p.config.state_dir ?? path.join('.sluice', p.name));
  return {
    stateDir,
    stateFile: path.join(stateDir, 'state.json'),
    deadLetterFile: path.resolve(p.baseDir, p.config.dead_letter ?? path.join(stateDir, 'dead-letters.jsonl')),
  };
}

export interface RunHooks {
  /** Called with the service connection once created (tests read the embedded emulator's counters). */
  onService?: (s: ServiceConnection) => void;
  /** Replaces the pipeline's source (dead-letter replay). */
  source?: Source;
  log?: Logger;
  /**
   * A fixed run id (dead-letter replay: one id per batch of letters, so a replay run again after a crash, even one
   * after its last commit, recognises every unit it committed).
   */
  runId?: string;
  /** Index of the first transform a unit goes through (replay: a transform's letters re-enter at that transform). */
  firstTransform?: (u: WorkUnit) => number;
  /** Test seam: runs after a unit committed in every sink; a throw fails the run there, like a crash. */
  afterCommit?: (u: WorkUnit) => void | Promise<void>;
}

export async function runPipeline(p: LoadedPipeline, opts: RunOptions, hooks: RunHooks = {}): Promise<RunSummary> {
  const startedAt = Date.now();
  const counters: Counters = { records: 0, bytes: 0, retries: 0, deadLetters: 0 };
  const progress = new Progress(
    { counters, startedAt },
    {
      tty: opts.progress && !opts.quiet && Boolean(process.stderr.isTTY),
      intervalMs: 10_000,
      write: (s) => process.stderr.write(s),
    },
  );
  const progressState = progress.state;
  // On a terminal, log lines appear above the progress bars rather than through them.
  const log = progress.wrap(hooks.log ?? createLogger({ format: opts.logFormat, level: opts.quiet ? 'warn' : 'info' }));
  const paths = pipelinePaths(p);
  const state = await FileStateStore.open(paths.stateFile);

  // A run that completed is over: the next invocation is a new run (tonight's load), with a new id. A run that did
  // not complete is resumed, keeping its id, so the units it committed are recognised and skipped.
  let runId = state.get<string>('run:id');
  const resumed =
    !opts.fresh &&
    runId !== undefined &&
    state.get('run:complete') !== true &&
    (hooks.runId === undefined || hooks.runId === runId);
  if (!resumed) {
    await state.clear();
    runId =
      hooks.runId ??
      `${new Date()
        .toISOString()
        .replace(/[-:.TZ]/g, '')
        .slice(0, 14)}-${randomBytes(3).toString('hex')}`;
    await state.set('run:id', runId);
  }
  const run = runId as string;
  log.info(`${resumed ? 'resuming' : 'starting'} ${p.name} (run ${run})`);

  const dlq = new DeadLetterFile(paths.deadLetterFile, run);
  await dlq.open();
  const deadLetter = (d: Parameters<DeadLetterFile['write']>[0]): void => {
    counters.deadLetters++;
    dlq.write(d);
  };
  const service = new ServiceConnection(p.config.service, p.baseDir, log, counters);
  warnIfPoolCapsConcurrency(p, log);
  hooks.onService?.(service);
  const deps: ComponentDeps = { log, baseDir: p.baseDir, client: () => service.get() };
  const built = buildComponents(p.config, deps);
  if (hooks.source) built.source = hooks.source;
  const abort = new AbortController();
  const sctx: SourceContext = {
    signal: abort.signal,
    log,
    state,
    counters,
    deadLetter,
    baseDir: p.baseDir,
    dryRun: false,
    sharded: opts.shard !== undefined,
  };
  const sinkCtx: SinkContext = { log, deadLetter, baseDir: p.baseDir, pipeline: p.name, fresh: !resumed };

  const units = { total: 0, done: 0, skipped: 0, failed: 0 };
  let failure: unknown;
  try {
    for (const s of built.sinks) await s.sink.open(sinkCtx);
    const committedPerSink = await Promise.all(built.sinks.map((s) => s.sink.committedUnits()));
    // Sinks see run-scoped unit ids, so tonight's page 1 of a query is not mistaken for last night's.
    const sinkId = (u: WorkUnit): string => `${run}/${u.id}`;
    const pendingSinks = (u: WorkUnit): number[] =>
      built.sinks.map((_, i) => i).filter((i) => !committedPerSink[i]?.has(sinkId(u)));

    if (opts.progress && !opts.quiet) progress.start();
    let planned = await built.source.plan(sctx);
    if (opts.shard) planned = planned.filter((u) => inShard(u, opts.shard!));
    progressState.plan = `${planned.length} unit(s) planned${opts.shard ? ` in shard ${opts.shard.index}/${opts.shard.count}` : ''}`;

    const concurrency = Number(p.config.source.concurrency ?? 4);
    const limit = pLimit(Math.max(1, concurrency));
    const scheduled = new Set<string>();
    const running: Promise<void>[] = [];

    const schedule = (u: WorkUnit): void => {
      if (scheduled.has(u.id)) return;
      if (opts.shard && !inShard(u, opts.shard)) return;
      scheduled.add(u.id);
      units.total++;
      progressState.unitsTotal = units.total;
      const todo = pendingSinks(u);
      if (todo.length === 0) {
        units.skipped++;
        units.done++;
        progressState.unitsDone = units.done;
        // A committed page still tells a crawl where the next page is (from the checkpointed state).
        for (const next of built.source.discover?.(u, sctx) ?? []) schedule(next);
        return;
      }
      running.push(
        limit(async () => {
          if (failure !== undefined) return;
          try {
            await runUnit(u, todo);
            await hooks.afterCommit?.(u);
            failpoint('engine:after-commit');
            units.done++;
            progressState.unitsDone = units.done;
            for (const next of built.source.discover?.(u, sctx) ?? []) schedule(next);
          } catch (err) {
            units.failed++;
            failure ??= err;
            log.error(`unit ${u.id} failed: ${errorText(err)}`);
          }
        }),
      );
    };

    // Re-reading a unit is a retry too: it follows the pipeline's retry timing (the client's defaults otherwise).
    const unitBackoff = {
      baseMs: p.config.service.retry?.base_delay_ms ?? 500,
      maxMs: p.config.service.retry?.max_delay_ms ?? 30_000,
    };
    const runUnit = async (u: WorkUnit, sinkIdx: number[]): Promise<void> => {
      const scoped: WorkUnit = { ...u, id: sinkId(u) };
      const sinks = sinkIdx.map((i) => built.sinks[i]!.sink);
      for (let attempt = 1; ; attempt++) {
        try {
          if (fastPath && sinks.every((s) => s.writeUnitFile)) {
            await runUnitFromFile(u, scoped, sinks);
            return;
          }
          await writeBatches(scoped, sinks, transformed(u, built.source.read(u, sctx)));
          return;
        } catch (err) {
          if (attempt >= UNIT_ATTEMPTS && err instanceof DecodeError) throw cutShortEveryTime(err, attempt);
          if (attempt >= UNIT_ATTEMPTS || !isTransient(err) || abort.signal.aborted) throw err;
          counters.retries++;
          const delay = Math.min(unitBackoff.maxMs, unitBackoff.baseMs * 2 ** attempt) * (0.5 + Math.random() / 2);
          // Decode errors already start with the unit id: say it once.
          const why = errorText(err).replace(`${u.id}: `, '');
          log.warn(`unit ${u.id}: ${why}; reading it again in ${Math.round(delay)} ms`, { attempt });
          await new Promise((r) => setTimeout(r, delay));
        }
      }
    };

    const transformed = (u: WorkUnit, batches: AsyncIterable<Batch>): AsyncIterable<Batch> => {
      const first = hooks.firstTransform?.(u) ?? 0;
      built.transforms.forEach((t, step) => {
        if (step < first) return;
        // Each transform's letters say which transform it was and the record's ordinal there (replay re-enters
        // at that transform; the ordinal tells two records with the same reason apart), and the unit's params.
        let index = 0;
        const tctx: TransformContext = {
          log,
          deadLetter: (d) => deadLetter({ ...d, step, index: index++, unit_params: u.params }),
          unitId: u.id,
          unitParams: u.params,
        };
        batches = t.fn(batches, tctx);
      });
      return countRecords(batches, counters);
    };

    const writeBatches = async (scoped: WorkUnit, sinks: Sink[], batches: AsyncIterable<Batch>): Promise<void> => {
      const streams = tee(batches, sinks.length);
      await Promise.all(
        sinks.map(async (sink, k) => {
          await sink.writeUnit(scoped, streams[k]!);
          // A sink that found the unit committed returns without reading: release its share of the tee.
          await streams[k]![Symbol.asyncIterator]().return?.();
        }),
      );
    };

    // Pipelines without JS transforms let sinks that load files natively (DuckDB) read the unit's bytes
    // themselves. Whatever the native reader rejects is decoded again from the same local file by the JS path,
    // which dead-letters bad records one by one: the fast path never drops what the slow path would keep.
    const fastPath =
      built.transforms.length === 0 && built.source.rawFile !== undefined && p.config.fast_path !== false;
    const tmpDir = path.join(paths.stateDir, 'tmp');
    // Downloads a killed run could not delete: their units are read again, or were committed before the kill. One
    // run of a pipeline at a time owns its state directory, as the sinks own their temp directories.
    await rm(tmpDir, { recursive: true, force: true });
    const runUnitFromFile = async (u: WorkUnit, scoped: WorkUnit, sinks: Sink[]): Promise<void> => {
      await mkdir(tmpDir, { recursive: true });
      const raw = await built.source.rawFile!(u, sctx, tmpDir);
      try {
        if (raw.format === 'jsonl') {
          try {
            const results = await Promise.all(sinks.map((s) => s.writeUnitFile!(scoped, raw)));
            counters.records += results[0]?.records ?? 0;
            return;
          } catch (err) {
            log.debug(`unit ${u.id}: native load refused the file (${errorText(err)}); decoding it in JS`);
          }
        }
        const bytes = createReadStream(raw.path, { highWaterMark: 1 << 16 });
        await writeBatches(
          scoped,
          sinks,
          transformed(u, decode(bytes, { format: raw.format, unit: u.id, deadLetter })),
        );
      } finally {
        if (raw.temporary) await rm(raw.path, { force: true });
      }
    };

    for (const u of planned) schedule(u);
    while (running.length) await Promise.all(running.splice(0));
    if (failure !== undefined) throw failure;
    for (const s of built.sinks) await s.sink.finish();
    failpoint('engine:before-complete');
    await state.set('run:complete', true);
  } catch (err) {
    failure ??= err;
  } finally {
    progress.stop();
    abort.abort();
    await built.source.close?.().catch(() => undefined);
    for (const s of built.sinks) await s.sink.close().catch((e: unknown) => log.warn(`closing sink: ${errorText(e)}`));
    await dlq.close().catch((e: unknown) => (failure ??= e));
    await service.close();
  }

  const summary: RunSummary = {
    pipeline: p.name,
    units,
    records: counters.records,
    bytes: counters.bytes,
    retries: counters.retries,
    deadLetters: counters.deadLetters,
    durationMs: Date.now() - startedAt,
    outputs: built.sinks.map((s) => s.label),
  };
  if (failure !== undefined) {
    const err =
      failure instanceof SluiceError
        ? failure
        : new SluiceError(errorText(failure), {
            hint: 'fix the cause and run the same command again: committed units are kept and skipped',
            cause: failure,
          });
    (err as SluiceError & { summary?: RunSummary }).summary = summary;
    throw err;
  }
  return summary;
}

export function formatSummary(s: RunSummary): string {
  const secs = s.durationMs / 1000;
  return [
    `done: ${s.pipeline}`,
    `  units        ${s.units.done}/${s.units.total} (${s.units.skipped} already committed, ${s.units.failed} failed)`,
    `  records      ${s.records.toLocaleString('en-US')}`,
    `  bytes        ${formatBytes(s.bytes)}`,
    `  retries      ${s.retries}`,
    `  dead letters ${s.deadLetters}`,
    `  duration     ${formatDuration(s.durationMs)}`,
    `  throughput   ${Math.round(s.records / Math.max(secs, 0.001)).toLocaleString('en-US')} records/s, ${formatBytes(s.bytes / Math.max(secs, 0.001))}/s`,
    ...s.outputs.map((o) => `  output       ${o}`),
  ].join('\n');
}

async function* countRecords(batches: AsyncIterable<Batch>, counters: Counters): AsyncIterable<Batch> {
  for await (const b of batches) {
    counters.records += b.length;
    yield b;
  }
}

/** Crawls put the query or fid in `shard_key`, so all pages of one query land in the same shard. */
export function inShard(u: WorkUnit, shard: { index: number; count: number }): boolean {
  const key = typeof u.params.shard_key === 'string' ? u.params.shard_key : u.id;
  const h = createHash('sha1').update(key).digest().readUInt32BE(0);
  return h % shard.count === shard.index;
}

/** A unit whose bytes came short or corrupt on every attempt: no point telling the user to "rerun to download". */
function cutShortEveryTime(err: DecodeError, attempts: number): SluiceError {
  return new SluiceError(err.message, {
    hint:
      `the unit was read ${attempts} times and its bytes were cut short or corrupt every time: the service or the ` +
      'network keeps failing on it; run the same command again later (committed units are kept and skipped)',
    cause: err,
  });
}

function errorText(err: unknown): string {
  return redact(err instanceof Error ? err.message : String(err));
}

/** `sluice plan`: what a run would do, without starting paid work (no filter job, no trigger, no enrich). */
export async function planPipeline(p: LoadedPipeline, hooks: RunHooks = {}): Promise<PlanReport> {
  const log = hooks.log ?? createLogger({ format: 'text', level: 'warn' });
  const paths = pipelinePaths(p);
  // Plan reads the checkpointed state (a started filter job's snapshot id) but never writes it.
  const fileState = await FileStateStore.open(paths.stateFile);
  const state = new MemoryStateStore();
  const resumable = fileState.get('run:complete') !== true;
  if (resumable) for (const k of fileState.keys()) state.data.set(k, fileState.get(k));
  const counters: Counters = { records: 0, bytes: 0, retries: 0, deadLetters: 0 };
  const service = new ServiceConnection(p.config.service, p.baseDir, log, counters);
  hooks.onService?.(service);
  const deps: ComponentDeps = { log, baseDir: p.baseDir, client: () => service.get() };
  const built = buildComponents(p.config, deps);
  const notes: string[] = [];
  const requests: string[] = [];
  const sctx: SourceContext = {
    signal: new AbortController().signal,
    log,
    report: (kind, text) => (kind === 'request' ? requests : notes).push(text),
    state,
    counters,
    deadLetter: () => undefined,
    baseDir: p.baseDir,
    dryRun: true,
  };
  try {
    const units = await built.source.plan(sctx);
    const est = units.reduce<number | undefined>(
      (sum, u) => (u.estimatedRecords === undefined || sum === undefined ? undefined : sum + u.estimatedRecords),
      0,
    );
    return {
      pipeline: p.name,
      source: built.sourceType,
      units: units.map((u) => ({
        id: u.id,
        ...(u.estimatedRecords !== undefined && { estimatedRecords: u.estimatedRecords }),
      })),
      requests,
      targets: sinkConfigs(p.config).map((s) => describeSink(s, p.baseDir)),
      ...(units.length > 0 && est !== undefined && { estimatedRecords: est }),
      notes,
    };
  } finally {
    await built.source.close?.().catch(() => undefined);
    for (const s of built.sinks) await s.sink.close().catch(() => undefined);
    await service.close();
  }
}

/** A pool smaller than the source's concurrency silently caps it: say so, once, with the fix. */
function warnIfPoolCapsConcurrency(p: LoadedPipeline, log: Logger): void {
  const pool = p.config.service?.connections as number | undefined;
  const concurrency = Number(p.config.source?.concurrency ?? 0);
  if (pool !== undefined && concurrency > pool)
    log.warn(
      `source.concurrency is ${concurrency} but service.connections is ${pool}: at most ${pool} requests will be in flight; raise service.connections or remove it (default 64)`,
    );
}
