/**
 * A pipeline built once, as every command uses it (Vector builds one topology, dlt one `Pipeline`): its components,
 * the service connection, the contexts the source and the sinks are given, the locks — all held by one session
 * (session.ts) that releases them in reverse order exactly once, however the command ends. `run`, `prepare`, `plan`,
 * `state`, `compact`, `dead-letters --replay`, `report` and the checks are thin users of it: none builds a source or
 * sink context, opens a sink or takes a lock by hand (test/runtime/runtime-only.test.ts holds that).
 *
 * Building opens nothing: a command takes what it needs — the pipeline's lock, the outputs' locks and open sinks,
 * the source's context — in that order, and `close()` lets it all go. Where the next run starts is asked of
 * `nextStart()` (cursor.ts), by every command alike.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { ClientOptions } from '../client/api.js';
import type { ComponentDeps } from '../contracts/component.js';
import { SluiceError } from '../core/errors.js';
import { errorText } from '../core/error-text.js';
import { makeDir } from '../core/make-dir.js';
import type { Limits } from '../core/limits.js';
import type { PaidWork } from '../core/paid-work.js';
import { RetryPolicy, retrying } from '../core/retry.js';
import type {
  Counters,
  DeadLetterFn,
  Logger,
  Sink,
  SinkContext,
  Source,
  SourceContext,
  StateStore,
} from '../core/types.js';
import { declaredOutput } from '../pipeline/declared-output.js';
import { pipelineLimits } from '../pipeline/limits-schema.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { Registry } from '../pipeline/registry.js';
import { resolveContract, type SchemaContractOption } from '../schema/contract.js';
import { unstorablePolicy } from '../schema/storable.js';
import { pipelinePaths, shardDirName, type PipelinePaths, type ShardId } from '../state/paths.js';
import { acquireRunLock, type LockOptions, type RunLock } from '../state/run-lock.js';
import { stateDirUnusable } from '../state/state-store.js';
import { UNIT_ATTEMPTS } from '../unit/run-units.js';
import type { BuiltTransform, PathSink } from '../unit/unit-path.js';
import { buildComponents, type SinkConfig } from './components.js';
import { readNextStart, type NextStart } from './cursor.js';
import { withLineage } from './lineage.js';
import { ServiceConnection } from './service.js';
import { RunSession } from './session.js';

export interface RuntimeOptions {
  /** Written into the locks for whoever finds them taken, e.g. `sluice run pipelines/x.yaml`. */
  command: string;
  log: Logger;
  /** `--shard i/n`: the shard's own state directory, and file outputs' shard manifests. */
  shard?: ShardId;
  /**
   * Takes part in the 429 budget the pipeline's shards share (client/shared-budget.ts) under this name, though not
   * a shard: `sluice prepare`, whose 429s count for the shards that follow it. A shard always takes part.
   */
  budgetMember?: string;
  /** An interrupt (SIGINT/SIGTERM): waits stop at once; units in flight get the pipeline's grace. */
  signal?: AbortSignal;
  /** How long to wait for another run's lock (`--wait`); default 0: fail at once (exit 3). */
  waitForLockMs?: number;
  /** The components the pipeline's types are looked up in (tests pass in-memory ones). Default: the registry. */
  registry?: Registry;
  /** Replaces the pipeline's source (dead-letter replay). */
  source?: Source;
  /** The command never calls the service (state, compact, report, schema): a component asking for it is a bug. */
  noService?: boolean;
  /** Told of every call to the service (the run's watchers). */
  onCall?: ClientOptions['onCall'];
  /** The client's retries are counted here (the run's counters). */
  counters?: Pick<Counters, 'retries'>;
  /** Told of the service connection once made (tests read the embedded emulator's counters). */
  onService?(service: ServiceConnection): void;
}

/** What a run (or a command that reads committed state) opens the sinks for. */
export interface SinksOpening {
  /** `--fresh`: the sinks forget committed units (and `replace` starts its new generation). */
  fresh: boolean;
  /** The run's id (absent: no run drives the sinks, as in `sluice state`). */
  runId?: string;
  /** Where records the sinks set aside go (absent: nowhere — no unit is written). */
  deadLetter?: DeadLetterFn;
  /** Retries of an `open()` that failed transiently are counted here. */
  counters?: Pick<Counters, 'retries'>;
}

/** What a source context is made of beyond the runtime's own parts. */
export interface SourceRun {
  state: StateStore;
  /** Where the source records what the service bills (the run's ledger, state/paid-ledger.ts). */
  paid: PaidWork;
  /** What the source reads under (one attempt at a unit); default: the runtime's, which an interrupt aborts. */
  signal?: AbortSignal;
  counters: Counters;
  deadLetter?: DeadLetterFn;
  /** `plan`: no paid work; what a run would do goes to `report`. */
  dryRun?: boolean;
  report?: SourceContext['report'];
  backfill?: SourceContext['backfill'];
  checkpoints?: SourceContext['checkpoints'];
}

export class PipelineRuntime {
  readonly paths: PipelinePaths;
  readonly limits: Limits;
  readonly log: Logger;
  readonly session: RunSession;
  readonly service: ServiceConnection;
  readonly source: Source;
  readonly sourceType: string;
  /** The source reads local files only: no deadline on a unit. */
  readonly offline: boolean;
  readonly transforms: readonly BuiltTransform[];
  /** The sinks, in the order of the pipeline's `sinks:`, each with its config, contract and store policy. */
  readonly sinks: readonly (PathSink & { config: SinkConfig })[];
  /** The pipeline's retry timing, for units and for opening sinks (the client has its own, from the same config). */
  readonly retry: RetryPolicy;
  /** The run's id once a run opened (lineage columns carry it). */
  runId: string | undefined;
  private sinkCtx: SinkContext | undefined;
  private readonly lockOptions: LockOptions;

  constructor(
    readonly pipeline: LoadedPipeline,
    private readonly opts: RuntimeOptions,
  ) {
    const config = pipeline.config;
    this.log = opts.log;
    this.paths = pipelinePaths(pipeline, opts.shard);
    this.limits = pipelineLimits(config.limits);
    this.session = new RunSession(opts.log, opts.signal, this.limits.interruptGraceMs);
    this.service = new ServiceConnection(config.service, pipeline.baseDir, opts.log, opts.counters ?? { retries: 0 }, {
      // One embedded emulator account for the prepare step, every shard and every command.
      emulatorStateFile: path.join(this.paths.rootStateDir, 'emulator.json'),
      limits: this.limits,
      ...(opts.onCall && { onCall: opts.onCall }),
      // Shards behind one address share one 429 budget, through the state directory they share.
      ...((opts.shard || opts.budgetMember !== undefined) && {
        sharedBudget: {
          dir: path.join(this.paths.rootStateDir, 'service-budget'),
          self: opts.shard ? shardDirName(opts.shard) : opts.budgetMember!,
          shards: opts.shard
            ? Array.from({ length: opts.shard.count }, (_, index) => shardDirName({ index, count: opts.shard!.count }))
            : [],
        },
      }),
    });
    this.session.hold('closing the service connection', this.service, (s) => s.close());
    opts.onService?.(this.service);
    const deps: ComponentDeps = {
      log: opts.log,
      baseDir: pipeline.baseDir,
      client: opts.noService ? () => Promise.reject(noServiceCall(opts.command)) : () => this.service.get(),
      ...(opts.shard && { shard: opts.shard }),
    };
    const built = buildComponents(config, deps, opts.registry);
    this.source = opts.source ?? built.source;
    this.session.hold('closing the source', this.source, (s) => s.close?.(), 'ignore');
    this.sourceType = built.sourceType;
    this.offline = built.offline;
    this.transforms = built.transforms;
    this.sinks = built.sinks.map(({ config: c, sink }) => ({
      config: c,
      sink: c.lineage === true ? withLineage(sink, () => this.runId ?? '') : sink,
      contract: resolveContract(config.schema_contract, c.schema_contract as SchemaContractOption),
      unstorable: unstorablePolicy(c),
    }));
    this.retry = new RetryPolicy({
      attempts: UNIT_ATTEMPTS,
      baseMs: config.service?.retry?.base_delay_ms ?? 500,
      maxMs: config.service?.retry?.max_delay_ms ?? 30_000,
    });
    this.lockOptions = {
      command: opts.command,
      log: opts.log,
      waitMs: opts.waitForLockMs ?? 0,
      signal: this.session.signal,
    };
  }

  /** The sinks themselves, in the order of the pipeline's `sinks:`. */
  get sinkList(): Sink[] {
    return this.sinks.map((s) => s.sink);
  }

  /** The pipeline's lock (its state directory): one run of a pipeline at a time. Held until `close()`. */
  async lockPipeline(): Promise<RunLock> {
    const file = this.paths.lockFile;
    try {
      await makeDir(path.dirname(file));
      const lock = await acquireRunLock(file, this.lockOptions);
      return this.session.hold(`releasing the lock ${file}`, lock, (l) => l.release());
    } catch (err) {
      // A lock held by another run (LockedError) or an interrupted wait is not a filesystem problem.
      if (/^E[A-Z]+$/.test(String((err as NodeJS.ErrnoException | undefined)?.code ?? '')))
        throw stateDirUnusable(file, err);
      throw err;
    }
  }

  /**
   * The outputs' locks (a file sink's directory, which two pipelines may share), then the sinks opened as `opening`
   * says: opening a file sink settles and deletes another writer's temp files. Taken in path order, so two runs that
   * wait (`--wait`) for the same outputs never hold one each. A sink whose server or link failed meanwhile (a
   * connection reset, a server restarting) is opened again after the retry policy's wait rather than failing a whole
   * unattended run over a blip. Closed (sinks first) when the runtime closes.
   */
  async openOutputs(opening: SinksOpening): Promise<void> {
    await this.lockOutputs();
    const ctx = this.sinkContext(opening);
    // Closed before the outputs' locks are released: a DuckDB file is checkpointed on close, and the next run finds
    // it settled.
    const opened: Sink[] = [];
    this.session.defer('closing sink', async () => {
      for (const s of opened) await s.close().catch((e: unknown) => this.log.warn(`closing sink: ${errorText(e)}`));
    });
    for (const sink of this.sinkList) {
      await retrying(() => sink.open(ctx), {
        policy: this.retry,
        signal: this.session.signal,
        onRetry: (attempt, err, delay) => {
          if (opening.counters) opening.counters.retries++;
          this.log.warn(`${sink.describe()}: ${errorText(err)}; opening it again in ${Math.round(delay)} ms`, {
            attempt,
          });
        },
      });
      opened.push(sink);
    }
  }

  /** The file outputs' locks alone (`sluice compact` opens no sink: compaction is its own commit). */
  async lockOutputs(): Promise<void> {
    const files = [...new Set(this.sinkList.flatMap((s) => s.capabilities.files?.lockFile ?? []))].sort();
    for (const file of files) {
      await makeOutputDir(path.dirname(file));
      const lock = await acquireRunLock(file, this.lockOptions).catch((err: unknown) =>
        Promise.reject(unwritable(file, err)),
      );
      this.session.hold(`releasing the lock ${file}`, lock, (l) => l.release());
    }
  }

  /** The one context the sinks are given, made on first use. */
  sinkContext(opening: SinksOpening = { fresh: false }): SinkContext {
    this.sinkCtx ??= {
      log: this.log,
      // No unit is written without a run: nothing can be set aside.
      deadLetter: opening.deadLetter ?? (() => undefined),
      baseDir: this.pipeline.baseDir,
      pipeline: this.pipeline.name,
      fresh: opening.fresh,
      ...(opening.runId !== undefined && { runId: opening.runId }),
      declared: declaredOutput(this.pipeline.config.transforms ?? [], this.opts.registry),
    };
    return this.sinkCtx;
  }

  /** The context the source is given, for a run (or a plan's dry run). */
  sourceContext(run: SourceRun): SourceContext {
    return {
      signal: run.signal ?? this.session.signal,
      limits: this.limits,
      log: this.log,
      state: run.state,
      paid: run.paid,
      counters: run.counters,
      deadLetter: run.deadLetter ?? (() => undefined),
      baseDir: this.pipeline.baseDir,
      now: () => this.service.now(),
      dryRun: run.dryRun === true,
      sharded: this.opts.shard !== undefined,
      ...(run.report && { report: run.report }),
      ...(run.backfill && { backfill: run.backfill }),
      ...(run.checkpoints && { checkpoints: run.checkpoints }),
    };
  }

  /**
   * Where the next run starts (cursor.ts), from the opened sinks. A source that keeps no cursor has none (undefined);
   * a sink that cannot be asked for checkpoints of an incremental source fails the command (exit 2).
   */
  async nextStart(opts: { exceptRun?: string } = {}): Promise<NextStart | undefined> {
    if (!this.source.incremental) return undefined;
    return readNextStart(this.sinkList, this.paths.rootStateDir, opts);
  }

  /**
   * Where the next run starts, read outside a run (`plan`, `report`): only when an earlier run left state behind (a
   * first plan must not create the outputs — a DuckDB file, a declared table — to find them empty), under the
   * pipeline's and the outputs' locks taken without waiting, sinks opened and closed again before it returns.
   * Undefined for a source that keeps no cursor; an empty start on a pipeline that never ran.
   */
  async peekNextStart(): Promise<NextStart | undefined> {
    if (!this.source.incremental) return undefined;
    const ranBefore = await stat(this.paths.stateFile).then(
      () => true,
      () => false,
    );
    if (!ranBefore)
      return { checkpoints: new Map(), effective: [], perSink: this.sinks.map(() => new Map()), changes: 0 };
    const scoped = new PipelineRuntime(this.pipeline, { ...this.opts, noService: true, waitForLockMs: 0 });
    try {
      await scoped.lockPipeline();
      await scoped.openOutputs({ fresh: false });
      return await scoped.nextStart();
    } finally {
      await scoped.close();
    }
  }

  /** Releases everything the runtime holds, last taken first; returns the command's failure (see session.ts). */
  close(failure?: unknown): Promise<unknown> {
    return this.session.close(failure);
  }
}

/** Builds a runtime, runs `fn` with it, and closes it however `fn` ends (its failure stays the failure). */
export async function withRuntime<T>(
  pipeline: LoadedPipeline,
  opts: RuntimeOptions,
  fn: (rt: PipelineRuntime) => Promise<T>,
): Promise<T> {
  const rt = new PipelineRuntime(pipeline, opts);
  let result: T;
  try {
    result = await fn(rt);
  } catch (err) {
    throw await rt.close(err);
  }
  const failure = await rt.close();
  if (failure !== undefined) throw failure;
  return result;
}

function noServiceCall(command: string): SluiceError {
  return new SluiceError(`${command} does not call the service`, { hint: 'this is a bug: please report it' });
}

async function makeOutputDir(dir: string): Promise<void> {
  try {
    await makeDir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SluiceError(`cannot create the output directory ${dir} (${code})`, {
      hint:
        code === 'EEXIST' || code === 'ENOTDIR'
          ? 'a file is in the way of that directory: move the file, or point the sink somewhere else'
          : code === 'EROFS'
            ? 'that filesystem is mounted read-only: mount it read-write, or point the sink somewhere writable'
            : 'give the user running sluice write access there, or point the sink somewhere writable',
      cause: err,
    });
  }
}

/** The lock file cannot be created in an existing directory (read-only, full): name the directory and the fix. */
function unwritable(file: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // A lock held by another run (LockedError) or an interrupted wait is not a filesystem problem.
  if (err instanceof SluiceError || !/^E[A-Z]+$/.test(String(code ?? ''))) return err;
  return new SluiceError(`cannot write to the output directory ${path.dirname(file)} (${code})`, {
    hint: 'give the user running sluice write access there, or point the sink somewhere writable',
    cause: err,
  });
}
