/** `sluice plan`: what a run would do, without starting paid work (no filter job, no trigger, no enrich). */
import { errorText } from '../core/error-text.js';
import type { Sink } from '../core/types.js';
import { declaredOutput } from '../pipeline/declared-output.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { Registry } from '../pipeline/registry.js';
import { sinkConfigs } from '../runtime/components.js';
import { createLogger } from '../runtime/logger.js';
import { withRuntime } from '../runtime/runtime.js';
import { LINEAGE_COLUMNS } from '../schema/lineage.js';
import { staleAfterMs } from '../sources/resume-policy.js';
import { MissingJobError } from '../sources/saved-job.js';
import { runStartedAt } from '../state/run-id.js';
import { KEPT_STATE_PREFIX } from '../core/source-contract.js';
import { PaidLedger } from '../state/paid-ledger.js';
import { FileStateStore, MemoryStateStore } from '../state/state-store.js';
import type { PlanReport, SinkColumns } from './api.js';
import type { RunHooks } from './run-hooks.js';
import { newRunCounters } from './summary.js';

export function planPipeline(p: LoadedPipeline, hooks: Pick<RunHooks, 'log' | 'onService'> = {}): Promise<PlanReport> {
  const log = hooks.log ?? createLogger({ format: 'text', level: 'warn' });
  const runtime = { command: `sluice plan ${p.file}`, log, ...(hooks.onService && { onService: hooks.onService }) };
  return withRuntime(p, runtime, async (rt) => {
    // Plan reads the checkpointed state (a started filter job's snapshot id) but never writes it.
    const fileState = await FileStateStore.open(rt.paths.stateFile);
    const state = new MemoryStateStore();
    const notes: string[] = [];
    if (fileState.get('run:complete') !== true) {
      const stale = staleNote(fileState.get<string>('run:id'), p.config.resume);
      if (stale) notes.push(stale);
      else for (const k of fileState.keys()) state.data.set(k, fileState.get(k));
    }
    // What earlier runs kept for later ones (the places a search found) the next run uses, whatever run it is.
    for (const k of fileState.keys(KEPT_STATE_PREFIX)) state.data.set(k, fileState.get(k));
    // An incremental source plans from where the next run starts, as the run would: read under the pipeline's
    // locks, which a run in progress holds — then the plan shows the initial cursor, with a note saying why.
    const next = await rt.peekNextStart().catch((err: unknown) => {
      notes.push(`the cursor could not be read from the sinks (${errorText(err)}): the plan shows the initial cursor`);
      return undefined;
    });
    const requests: string[] = [];
    const ctx = rt.sourceContext({
      state,
      // A dry run pays for nothing; its ledger is in memory, like its state.
      paid: PaidLedger.open(state, 0),
      counters: newRunCounters(),
      dryRun: true,
      report: (kind, text) => (kind === 'request' ? requests : notes).push(text),
      ...(next && { checkpoints: next.checkpoints }),
    });
    // Free checks against the service (key, zone, dataset, snapshot, request) before the plan is made.
    await rt.source.preflight?.(ctx);
    const units = await rt.source.plan(ctx).catch((err: unknown) => {
      if (!(err instanceof MissingJobError)) throw err;
      notes.push(
        `${err.message}: ${
          p.config.resume?.on_missing_job === 'restart'
            ? 'a run starts a new run (resume.on_missing_job: restart), making the paid requests listed'
            : 'a run stops there (resume.on_missing_job: fail); `run --fresh` makes the paid requests listed'
        }`,
      );
      state.data.clear();
      return rt.source.plan(ctx);
    });
    const est = units.reduce<number | undefined>(
      (sum, u) => (u.estimatedRecords === undefined || sum === undefined ? undefined : sum + u.estimatedRecords),
      0,
    );
    return {
      pipeline: p.name,
      source: rt.sourceType,
      units: units.map((u) => ({
        id: u.id,
        ...(u.estimatedRecords !== undefined && { estimatedRecords: u.estimatedRecords }),
      })),
      requests,
      targets: rt.sinkList.map((s) => s.describe()),
      columns: sinkColumns(p, rt.sinkList),
      ...(units.length > 0 && est !== undefined && { estimatedRecords: est }),
      notes,
    };
  });
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
