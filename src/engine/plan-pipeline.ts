/** `sluice plan`: what a run would do, without starting paid work (no filter job, no trigger, no enrich). */
import path from 'node:path';
import { pipelineLimits } from '../pipeline/limits-schema.js';
import type { Sink, SourceContext } from '../core/types.js';
import type { ComponentDeps } from '../contracts/component.js';
import { declaredOutput } from '../pipeline/declared-output.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { Registry } from '../pipeline/registry.js';
import type { PlanReport, SinkColumns } from './api.js';
import { buildComponents, sinkConfigs } from './components.js';
import { LINEAGE_COLUMNS } from '../schema/lineage.js';
import { createLogger } from './logger.js';
import { pipelinePaths } from './paths.js';
import { cursorForPlan } from './plan-cursor.js';
import { ServiceConnection } from './service.js';
import { FileStateStore, MemoryStateStore } from './state-store.js';
import { newRunCounters } from './summary.js';
import type { RunHooks } from './run-hooks.js';
import { runStartedAt } from './stages/open-state.js';
import { MissingJobError } from '../sources/saved-job.js';
import { staleAfterMs } from '../sources/resume-policy.js';

export async function planPipeline(
  p: LoadedPipeline,
  hooks: Pick<RunHooks, 'log' | 'onService'> = {},
): Promise<PlanReport> {
  const log = hooks.log ?? createLogger({ format: 'text', level: 'warn' });
  // Plan reads the checkpointed state (a started filter job's snapshot id) but never writes it.
  const paths = pipelinePaths(p);
  const fileState = await FileStateStore.open(paths.stateFile);
  const state = new MemoryStateStore();
  const notes: string[] = [];
  if (fileState.get('run:complete') !== true) {
    const stale = staleNote(fileState.get<string>('run:id'), p.config.resume);
    if (stale) notes.push(stale);
    else for (const k of fileState.keys()) state.data.set(k, fileState.get(k));
  }
  const counters = newRunCounters();
  // The embedded emulator's saved state is read, never written, by a plan (it writes only when something changes).
  const service = new ServiceConnection(p.config.service, p.baseDir, log, counters, {
    emulatorStateFile: path.join(paths.stateDir, 'emulator.json'),
    limits: pipelineLimits(p.config.limits),
  });
  hooks.onService?.(service);
  const deps: ComponentDeps = { log, baseDir: p.baseDir, client: () => service.get() };
  const built = buildComponents(p.config, deps);
  const requests: string[] = [];
  const sctx: SourceContext = {
    signal: new AbortController().signal,
    log,
    report: (kind, text) => (kind === 'request' ? requests : notes).push(text),
    state,
    counters,
    deadLetter: () => undefined,
    baseDir: p.baseDir,
    now: () => service.now(),
    dryRun: true,
  };
  try {
    // An incremental source plans from the cursor its sinks committed, as the run would.
    const cursor = await cursorForPlan(
      built.source,
      built.sinks.map((s) => s.sink),
      { paths, baseDir: p.baseDir, pipeline: p.name, file: p.file, log, note: (t) => notes.push(t) },
    );
    if (cursor !== undefined) sctx.checkpoints = cursor;
    // Free checks against the service (key, zone, dataset, snapshot, request) before the plan is made.
    await built.source.preflight?.(sctx);
    const units = await built.source.plan(sctx).catch((err: unknown) => {
      if (!(err instanceof MissingJobError)) throw err;
      notes.push(
        `${err.message}: ${
          p.config.resume?.on_missing_job === 'restart'
            ? 'a run starts a new run (resume.on_missing_job: restart), making the paid requests listed'
            : 'a run stops there (resume.on_missing_job: fail); `run --fresh` makes the paid requests listed'
        }`,
      );
      state.data.clear();
      return built.source.plan(sctx);
    });
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
      targets: built.sinks.map((s) => s.sink.describe()),
      columns: sinkColumns(
        p,
        built.sinks.map((s) => s.sink),
      ),
      ...(units.length > 0 && est !== undefined && { estimatedRecords: est }),
      notes,
    };
  } finally {
    await built.source.close?.().catch(() => undefined);
    for (const s of built.sinks) await s.sink.close().catch(() => undefined);
    await service.close();
  }
}

/**
 * The columns each sink's rows will have, as the transforms declare them (plus the lineage columns of a sink with
 * `lineage: true`), in each sink's own type names; `declared: false` when the sinks infer them from the data.
 * `sinks`: built from the pipeline's sink configs, in order, not necessarily opened.
 */
export function sinkColumns(p: LoadedPipeline, sinks: readonly Sink[], registry?: Registry): SinkColumns[] {
  const declared = declaredOutput(p.config.transforms ?? [], registry);
  const configs = sinkConfigs(p.config);
  return sinks.map((sink, i) => {
    const own = declared && configs[i]?.lineage === true ? [...declared, ...LINEAGE_COLUMNS] : declared;
    return {
      target: sink.describe(),
      declared: own !== undefined,
      columns: (own ?? []).map((c) => ({
        name: c.name,
        type: sink.typeName(c.type),
        nullable: c.nullable,
        description: c.description,
      })),
    };
  });
}

/** The note for an unfinished run that `resume.stale_after` would not resume (a run starts a new one instead). */
function staleNote(runId: string | undefined, policy: LoadedPipeline['config']['resume']): string | undefined {
  const limit = staleAfterMs(policy);
  const startedAt = runId === undefined ? undefined : runStartedAt(runId);
  if (limit === undefined || startedAt === undefined || Date.now() - startedAt.getTime() <= limit) return undefined;
  return `the unfinished run ${runId} started ${startedAt.toISOString()}, longer ago than resume.stale_after (${policy?.stale_after}): a run starts a new one instead of resuming it`;
}
