/**
 * The paid half of a snapshot source: the filter job a run starts (once), and the filter it runs. The job is keyed
 * by what it would select, reused from the run's state when an earlier run started it, refused in a sharded run, and
 * started through snapshot-reconcile.ts so a lost answer is not paid twice; an incremental load adds its cursor's
 * lower bound, fixed in the state the first time. Apart from snapshot.ts (which plans and downloads parts) because
 * this is where money is spent, and each rule here guards a way of spending it twice.
 */
import { createHash } from 'node:crypto';
import { ServiceError, type ServiceClient } from '../client/index.js';
import { describeWindow } from '../core/checkpoint.js';
import { SluiceError } from '../core/errors.js';
import { failpoint } from '../core/failpoints.js';
import type { SourceContext } from '../core/types.js';
import type { CursorBound } from './cursor-bound.js';
import { filterRefusal, matchesNothing, readFilterFiles, withCursor } from './filter.js';
import type { DatasetFieldNames } from './preflight.js';
import { readSavedJob, saveJob, type SavedJob } from './saved-job.js';
import { lastCursorValue } from './snapshot-cursor.js';
import { startFilterJobOnce, type FilterAttempt } from './snapshot-reconcile.js';
import type { SnapshotConfig } from './snapshot-schema.js';

/** What the filter job depends on besides the run: the source's config, cursor bound and the dataset's known fields. */
export interface FilterJobInputs {
  cfg: SnapshotConfig;
  bound: CursorBound;
  /** The dataset's fields when its metadata answered in the preflight (they word a refused filter better). */
  knownFields: DatasetFieldNames;
}

/** The snapshot to download: configured, checkpointed by an earlier run, or started now (paid). */
export async function snapshotJob(
  source: FilterJobInputs,
  client: ServiceClient,
  ctx: SourceContext,
): Promise<SavedJob | undefined> {
  if (source.cfg.snapshot_id) return { id: source.cfg.snapshot_id };
  const filter = await effectiveFilter(source, ctx);
  // Checked before the paid call: the service would only say "Invalid file format" or "File not found".
  const files = await readFilterFiles(source.cfg.files, filter, ctx.baseDir);
  // Keyed by what the job would select, so editing the filter starts a new job rather than reusing a stale one.
  const key = `snapshot:job:${createHash('sha256')
    .update(JSON.stringify([source.cfg.dataset_id, filter, source.cfg.records_limit]))
    .update(Buffer.concat(files.flatMap((f) => [Buffer.from(f.name), f.content])))
    .digest('hex')
    .slice(0, 16)}`;
  const known = readSavedJob(ctx.state, key);
  if (known) {
    ctx.log.info(`reusing snapshot ${known.id} of the filter job started earlier (no new paid job)`);
    return known;
  }
  if (ctx.sharded && !ctx.dryRun)
    throw new SluiceError('a sharded run (--shard) will not start a filter job: every shard would pay for its own', {
      hint:
        'run `sluice prepare <pipeline.yaml>` once before the shards (they then split its snapshot), or start the ' +
        'job once (`sluice datasets filter … --yes`) and set source.snapshot_id to its snapshot in the sharded pipeline',
    });
  const attemptKey = `${key}:attempt`;
  if (ctx.dryRun) {
    const lost = ctx.state.get<FilterAttempt>(attemptKey);
    if (lost)
      ctx.report?.(
        'note',
        `the filter call made at ${lost.started_at} got no answer: a run first lists the dataset's snapshots (free) to adopt its job, and calls again only if it started none`,
      );
    ctx.report?.('request', `POST /datasets/filter (paid: would start a filter job on ${source.cfg.dataset_id})`);
    ctx.report?.('note', 'units are the parts of the snapshot the filter job creates; not started by plan');
    return undefined;
  }
  const datasetId = source.cfg.dataset_id!;
  // A lost answer is resolved against the dataset's snapshot list rather than paid for twice (snapshot-reconcile.ts).
  const started = await startFilterJobOnce({
    client,
    ctx,
    datasetId,
    attemptKey,
    post: () =>
      client.datasets
        .filter({
          dataset_id: datasetId,
          filter,
          ...(source.cfg.records_limit !== undefined && { records_limit: source.cfg.records_limit }),
          ...(files.length > 0 && { files }),
        })
        .catch((err: unknown) => {
          // The request's path does not name the dataset, so the service's bare 404 would leave the user guessing.
          if (err instanceof ServiceError && err.status === 404)
            throw new SluiceError(`dataset ${datasetId} does not exist (${err.message})`, {
              hint: 'check source.dataset_id: `sluice datasets list` shows the ids of the datasets you can filter',
              cause: err,
            });
          throw filterRefusal(err, datasetId, source.knownFields);
        }),
  }).catch((err: unknown) => {
    // No record matches, known before any job started (docs/service.md §2.3): nothing was charged.
    if (!matchesNothing(err)) throw err;
    nothingMatched(source.cfg, ctx, `the service answered ${err.status} "${err.serviceMessage}"`);
    return undefined;
  });
  if (started === undefined) return undefined;
  const snapshot_id = started;
  failpoint('snapshot:job-started');
  const job = await saveJob(ctx, key, { kind: 'filter', for: 'filter job' }, snapshot_id);
  await ctx.state.delete(attemptKey);
  failpoint('snapshot:job-checkpointed');
  ctx.log.info(`filter job started: snapshot ${snapshot_id}`);
  return job;
}

/**
 * The filter the job runs: the configured one, plus the cursor's condition when incremental. The cursor's lower
 * bound is fixed in the run's state the first time it is computed: a resumed run, whose own committed parts
 * advanced the checkpoints meanwhile, must find the same filter and so the job it already paid for.
 */
async function effectiveFilter(
  source: FilterJobInputs,
  ctx: SourceContext,
): Promise<Record<string, unknown> | undefined> {
  const inc = source.cfg.incremental;
  if (inc === undefined) return source.cfg.filter;
  const w = ctx.backfill;
  if (w !== undefined) {
    const filter = withCursor(source.cfg.filter, inc.cursor, w.from, w.to)!;
    ctx.log.info(`backfill: ${describeWindow(w)}; the nightly cursor stays where it is`);
    ctx.report?.('note', `effective filter (backfill on ${inc.cursor}): ${JSON.stringify(filter)}`);
    return filter;
  }
  const key = `snapshot:cursor:${inc.cursor}`;
  // Kept as this run first stored it, even if an earlier sluice stored it less strictly: the job paid for was
  // started with it, and a resumed run finds that job by its filter.
  let after = ctx.state.get<string | number>(key);
  if (after === undefined) {
    // A checkpoint from the future (committed before cursors were bounded) is not a lower bound either, nor one an
    // earlier sluice stored as typed (`2025-02-30`).
    const future: string[] = [];
    const accepts = (v: string | number): boolean => source.bound.accepts(v, ctx) || (future.push(String(v)), false);
    const unreadable: string[] = [];
    const notRead = (v: unknown, problem: string): void => void unreadable.push(`${JSON.stringify(v)} (${problem})`);
    after = lastCursorValue(ctx.checkpoints, inc.cursor, accepts, inc.initial, notRead) ?? inc.initial;
    if (future.length > 0)
      ctx.log.warn(
        `incremental: committed ${inc.cursor} ${JSON.stringify(future.sort().at(-1))} is later than ${source.bound.describe()}: not used as the lower bound`,
      );
    if (unreadable.length > 0)
      ctx.log.warn(
        `incremental: committed ${inc.cursor} ${unreadable[0]}${unreadable.length > 1 ? ` and ${unreadable.length - 1} more` : ''} is not a value of the cursor: not used as the lower bound`,
      );
    if (!ctx.dryRun) await ctx.state.set(key, after);
  }
  const filter = withCursor(source.cfg.filter, inc.cursor, after)!;
  const from =
    after === inc.initial
      ? `the initial value ${JSON.stringify(after)}`
      : `${JSON.stringify(after)}, the last value loaded`;
  ctx.log.info(`incremental: ${inc.cursor} > ${from}`);
  ctx.report?.('note', `effective filter (incremental on ${inc.cursor}): ${JSON.stringify(filter)}`);
  if (ctx.checkpoints === undefined && ctx.dryRun)
    ctx.report?.('note', `the last ${inc.cursor} loaded is read from the sinks when the pipeline runs`);
  return filter;
}

/** No record matched: an empty result. Expected on a quiet night of an incremental load; worth a warning otherwise. */
export function nothingMatched(cfg: SnapshotConfig, ctx: SourceContext, what: string): void {
  const inc = cfg.incremental;
  if (inc === undefined) ctx.log.warn(`${what}: nothing to load (check source.filter if records were expected)`);
  else ctx.log.info(`${what}: no new records, nothing to load; the cursor on ${inc.cursor} stays where it was`);
}
