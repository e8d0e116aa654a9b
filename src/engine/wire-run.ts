/**
 * What every unit of a run shares, built once the run is open: the dead-letter file, the run's watchers, the
 * service connection (an embedded emulator), the pipeline's components, the contexts the source and the sinks are
 * given, and the unit runner (stage 4: run-unit → load-unit). Whatever is opened here is held by the run session.
 */
import path from 'node:path';
import type { ComponentDeps } from '../contracts/component.js';
import { RetryPolicy } from '../core/retry.js';
import type { Logger, Sink, SinkContext, Source, SourceContext, WorkUnit } from '../core/types.js';
import { declaredOutput } from '../pipeline/declared-output.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { EVOLVE, resolveContract, type SchemaContract, type SchemaContractOption } from '../schema/contract.js';
import { unstorablePolicy } from '../schema/storable.js';
import type { Attempt } from './attempt.js';
import { buildComponents, sinkConfigs, type Built, type SinkConfig } from './components.js';
import { DeadLetterFile } from './dead-letter-file.js';
import { withLineage } from './lineage.js';
import type { OpenedRun } from './open-run.js';
import type { RunSession } from './run-session.js';
import { RunWatch } from './run-watch.js';
import { ServiceConnection } from './service.js';
import { loadUnit } from './stages/load-unit.js';
import { runUnit, UNIT_ATTEMPTS } from './stages/run-unit.js';
import type { ScheduleRunOptions } from './stages/schedule.js';
import { SinkJudges } from './stages/store-gate.js';

export interface WiredRun {
  source: Source;
  sinks: Sink[];
  /** The sinks' configs, in the order of `sinks`. */
  sinkConfigs: SinkConfig[];
  contracts: Map<Sink, SchemaContract>;
  transforms: Built['transforms'];
  /** The source reads local files only: no deadline on a unit. */
  offline: boolean;
  sctx: SourceContext;
  sinkCtx: SinkContext;
  retry: RetryPolicy;
  watch: RunWatch;
}

export async function wireRun(a: Attempt, session: RunSession, run: OpenedRun): Promise<WiredRun> {
  const { p, opts, hooks, log, paths, counters, limits } = a;
  const { runId, resumed, state, window } = run;
  const dlq = new DeadLetterFile(paths.deadLetterFile, runId);
  await dlq.open();
  // Letters lost to a file that cannot be closed fail the run.
  session.hold('closing the dead-letter file', dlq, (f) => f.close(), 'fatal');
  const deadLetter = a.deadLettersTo(dlq, runId);
  // Notifications, metrics, traces and checks (src/observe/), through one object the run tells what happens. Told
  // last that the run ended, after every lock was released: a slow webhook cannot hold the pipeline's lock.
  const watch = await RunWatch.start(p.config, { baseDir: p.baseDir, log });
  a.watch = watch;
  const service = new ServiceConnection(p.config.service, p.baseDir, log, counters, {
    // One embedded emulator account for the prepare step and every shard.
    emulatorStateFile: path.join(paths.rootStateDir, 'emulator.json'),
    ...watch.serviceCalls(),
    limits,
  });
  session.hold('closing the service connection', service, (s) => s.close());
  hooks.onService?.(service);
  const deps: ComponentDeps = {
    log,
    baseDir: p.baseDir,
    client: () => service.get(),
    ...(opts.shard && { shard: opts.shard }),
  };
  const built = buildComponents(p.config, deps, hooks.registry);
  const source = hooks.source ?? built.source;
  session.hold('closing the source', source, (s) => s.close?.(), 'ignore');
  const configs = sinkConfigs(p.config);
  const sinks = built.sinks.map((s, i) => (configs[i]?.lineage === true ? withLineage(s.sink, runId) : s.sink));
  a.sinksBuilt(sinks);
  const contracts = new Map(
    sinks.map((s, i) => [
      s,
      resolveContract(p.config.schema_contract, configs[i]?.schema_contract as SchemaContractOption),
    ]),
  );
  warnIfPoolCapsConcurrency(p, source, log);
  const sctx: SourceContext = {
    signal: session.signal,
    limits,
    log,
    state,
    counters,
    deadLetter,
    baseDir: p.baseDir,
    now: () => service.now(),
    dryRun: false,
    sharded: opts.shard !== undefined,
    ...(window && { backfill: window }),
  };
  const sinkCtx: SinkContext = {
    log,
    deadLetter,
    baseDir: p.baseDir,
    pipeline: p.name,
    fresh: !resumed,
    runId,
    declared: declaredOutput(p.config.transforms ?? [], hooks.registry),
  };
  const retry = new RetryPolicy({
    attempts: UNIT_ATTEMPTS,
    baseMs: p.config.service?.retry?.base_delay_ms ?? 500,
    maxMs: p.config.service?.retry?.max_delay_ms ?? 30_000,
  });
  watch.started({
    identity: { ...a.identity, run: runId },
    resumed,
    startedAt: a.startedAt,
    sinks,
    counters,
    progress: a.progress.state,
  });
  return {
    source,
    sinks,
    sinkConfigs: configs,
    contracts,
    transforms: built.transforms,
    offline: built.offline,
    sctx,
    sinkCtx,
    retry,
    watch,
  };
}

/**
 * Stage 4 for one unit: tried again while its failure is transient (stages/run-unit.ts), each attempt read and
 * committed by stages/load-unit.ts; each commit's result is handed to the attempt's tally and the watchers.
 */
export function unitRunner(a: Attempt, session: RunSession, w: WiredRun): ScheduleRunOptions['runUnit'] {
  const { p, hooks, log, counters, limits } = a;
  const deadLetter = w.sctx.deadLetter;
  const judges = new SinkJudges((s) => unstorablePolicy(w.sinkConfigs[w.sinks.indexOf(s)]));
  const rawPath = w.transforms.length === 0 && p.config.fast_path !== false;
  return (u, sinkUnit, pending) =>
    runUnit(u, sinkUnit, pending, {
      retry: w.retry,
      log,
      counters,
      signal: session.signal,
      cancel: session.units,
      // A deadline bounds what the network sends; a local file takes as long as it takes.
      ...(!w.offline && { timeoutMs: limits.unitTimeoutMs }),
      source: w.source,
      attempt: async (unit, scoped, todo, read, signal) => {
        const load = await loadUnit(unit, scoped, todo, {
          source: read.source,
          commit: read.commit,
          sctx: { ...w.sctx, signal },
          log,
          chain: { transforms: w.transforms, log, deadLetter, counters },
          ...(hooks.firstTransform && { firstTransform: hooks.firstTransform }),
          rawPath,
          tmpDir: a.paths.tmpDir,
          writing: {
            contractOf: (s) => w.contracts.get(s) ?? EVOLVE,
            deadLetter,
            judges,
            log,
            onCommit: (s, r) => {
              a.committed(scoped.id, s, r);
              w.watch.committed(u, s, r);
            },
          },
        });
        if (load.path === 'native') counters.nativeLoads++;
        if (load.refusals.length > 0) {
          counters.nativeFallbacks++;
          log.warn(
            `unit ${unit.id}: ${load.refusals.map((r) => `${r.sink} refused the file (${r.reason})`).join('; ')}; decoding it in JS`,
          );
        }
      },
    });
}

/** The schedule of the planned units (stage 3), each run by `unitRunner`. */
export function scheduleOf(a: Attempt, session: RunSession, w: WiredRun, runId: string, planned: WorkUnit[]) {
  return {
    runId,
    source: w.source,
    sctx: w.sctx,
    sinks: w.sinks,
    planned,
    ...(a.opts.shard && { shard: a.opts.shard }),
    log: a.log,
    progress: a.progress.state,
    ...(a.hooks.afterCommit && { afterCommit: a.hooks.afterCommit }),
    halted: () => a.overBudget(),
    runUnit: unitRunner(a, session, w),
  } satisfies ScheduleRunOptions;
}

/** A pool smaller than the source's concurrency silently caps it: say so, once, with the fix. */
function warnIfPoolCapsConcurrency(p: LoadedPipeline, source: Source, log: Logger): void {
  const pool = p.config.service?.connections as number | undefined;
  const concurrency = source.concurrency;
  if (pool !== undefined && concurrency !== undefined && concurrency > pool)
    log.warn(
      `source.concurrency is ${concurrency} but service.connections is ${pool}: at most ${pool} requests will be in flight; raise service.connections or remove it (default 64)`,
    );
}
