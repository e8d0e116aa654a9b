/**
 * Dataset snapshots: filter job → poll → download in parts. Each part (`batch_size` records) is one work unit, so a
 * failed run re-downloads only the parts that did not commit. The filter job is paid: its snapshot id is
 * checkpointed the moment the service answers, and a rerun polls that snapshot instead of starting a second job. A
 * snapshot the service no longer knows (expired) is a MissingJobError, for the engine's `resume.on_missing_job`.
 *
 * `incremental: {cursor, initial}` adds `<cursor> > <last value>` to the filter, so the service builds (and charges
 * for) only records newer than those loaded: the last value is the largest cursor value the sinks committed
 * (each part's checkpoint is the largest it held), `initial` on a first run.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { pollSnapshot } from '../client/poll.js';
import { ServiceError, type Download, type ServiceClient, type SnapshotMeta } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import { failpoint } from '../core/failpoints.js';
import { PRIVATE_FILE } from '../core/private-files.js';
import type { Batch, RawDecodeOptions, RawFile, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { ComponentDef, ComponentDeps } from '../core/component.js';
import { decode } from '../decode/index.js';
import { countBytes } from './bytes.js';
import { CursorBound, DEFAULT_MAX_AHEAD_S, rejectedCursorWarning } from './cursor-bound.js';
import { rawDecodeOptions } from './raw-decode.js';
import {
  checkCursorFits,
  checkFilterFiles,
  filterRefusal,
  filterSchema,
  readFilterFiles,
  withCursor,
} from './filter.js';
import { unknownId } from './unknown-id.js';
import { checkDataset, keyRefused } from './preflight.js';
import { startFilterJobOnce, type FilterAttempt } from './snapshot-reconcile.js';
import { missingJob, readSavedJob, saveJob, type SavedJob } from './saved-job.js';

export const snapshotDownloadSchema = z
  .object({
    format: z.enum(['jsonl', 'json', 'csv']).default('jsonl').describe('Format the service writes the snapshot in.'),
    compress: z.boolean().default(true).describe('Ask for gzip bodies (decompressed on the fly).'),
    batch_size: z
      .number()
      .int()
      .min(1000)
      .default(10_000)
      .describe('Records per part; each part is one work unit (the service requires at least 1000).'),
  })
  .strict();

export const snapshotSchema = z
  .object({
    type: z.literal('snapshot'),
    dataset_id: z
      .string()
      .regex(/^gd_[a-z0-9]{1,60}$/i, 'a dataset id looks like gd_l1vikfnt1wgvvqz95w')
      .optional()
      .describe('Dataset to filter (`gd_…`). Required with `filter`.'),
    filter: filterSchema
      .optional()
      .describe('Filter object (field filter or and/or group, up to 3 levels). Starts a paid filter job.'),
    files: z
      .array(z.string())
      .default([])
      .describe(
        'Files with filter values (CSV with a header equal to the field name, or a JSON array of objects), relative to the pipeline file; a filter value names one by its file name.',
      ),
    records_limit: z.number().int().positive().optional().describe('Cap on the records placed in the snapshot.'),
    incremental: z
      .object({
        cursor: z.string().min(1).describe('Field that grows with new records, e.g. `timestamp`.'),
        initial: z
          .union([z.string(), z.number()])
          .describe('Load records whose cursor is above this on the first run, e.g. "2025-01-01T00:00:00Z".'),
        max_ahead_s: z
          .number()
          .int()
          .min(0)
          .default(DEFAULT_MAX_AHEAD_S)
          .describe(
            "A date cursor value later than the run's start plus this many seconds is not taken as the cursor (the record is still loaded, with a warning): one bad date such as 9999-12-31 would otherwise make every later run load nothing. Default 86400 (a day: local times labelled UTC run up to 14 h ahead).",
          ),
      })
      .strict()
      .optional()
      .describe(
        'Load only new records: adds `<cursor> > <largest value loaded>` to the filter (pair with `write: merge`).',
      ),
    snapshot_id: z
      .string()
      .regex(/^(snap|s)_[a-z0-9]{1,60}$/i, 'a snapshot id looks like snap_m2bxug4e2o352v1jv1')
      .optional()
      .describe('Download this existing snapshot instead of filtering.'),
    download: snapshotDownloadSchema.default({ format: 'jsonl', compress: true, batch_size: 10_000 }),
    concurrency: z.number().int().min(1).max(64).default(4).describe('Parts downloaded at once.'),
    poll: z
      .object({
        interval_ms: z.number().int().min(10).default(1000).describe('First wait between status checks.'),
        timeout_s: z.number().positive().default(900).describe('Give up waiting for the snapshot after this long.'),
      })
      .strict()
      .default({ interval_ms: 1000, timeout_s: 900 }),
  })
  .strict()
  .refine((c) => (c.snapshot_id === undefined) !== (c.filter === undefined && c.incremental === undefined), {
    message: 'set exactly one of `filter` (start a filter job) or `snapshot_id` (download an existing snapshot)',
  })
  .refine((c) => (c.filter === undefined && c.incremental === undefined) || c.dataset_id !== undefined, {
    message: '`dataset_id` is required with `filter`',
    path: ['dataset_id'],
  })
  .superRefine(checkFilterFiles)
  .superRefine(checkCursorFits);

export type SnapshotConfig = z.infer<typeof snapshotSchema>;

const SNAPSHOT_ID_HINT =
  'the id of a snapshot of this account (`sluice datasets snapshot <id>` looks one up; snapshots are kept 30 days)';

/** A part's checkpoint: the largest cursor value among its records. */
interface CursorCheckpoint {
  cursor: string;
  max: string | number;
}

class SnapshotSource implements Source {
  readonly concurrency: number;
  readonly checkpointFromRows: boolean;
  /** Only an incremental snapshot has it: the engine keeps a cursor for sources that do. */
  readonly unitCheckpoint?: (unit: WorkUnit) => CursorCheckpoint | undefined;
  /** Largest cursor value read per unit, for `unitCheckpoint`. */
  private readonly maxima = new Map<string, string | number>();
  /** The latest value a run takes as its cursor (cursor-bound.ts). */
  private readonly bound: CursorBound;
  /** What a part's bytes are: the same for `read()` and `rawFile()`. */
  private readonly decodeOptions: RawDecodeOptions;

  constructor(
    private readonly cfg: SnapshotConfig,
    private readonly deps: ComponentDeps,
  ) {
    this.concurrency = cfg.concurrency;
    this.checkpointFromRows = cfg.incremental !== undefined;
    this.bound = new CursorBound(cfg.incremental?.max_ahead_s);
    const cursor = cfg.incremental?.cursor;
    if (cursor !== undefined)
      this.unitCheckpoint = (unit) => {
        const max = this.maxima.get(unit.id);
        return max === undefined ? undefined : { cursor, max };
      };
    this.decodeOptions = rawDecodeOptions(cfg.download.format);
  }

  /** Free checks before anything is paid: the configured snapshot exists, or the dataset a filter job would run on. */
  async preflight(): Promise<void> {
    const client = await this.deps.client();
    const id = this.cfg.snapshot_id;
    if (id === undefined) return checkDataset(client, this.cfg.dataset_id!);
    await client.datasets.snapshot(id).catch((err: unknown) => {
      throw keyRefused(unknownId(err, `snapshot ${id}`, 'source.snapshot_id', SNAPSHOT_ID_HINT));
    });
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    this.bound.start(ctx);
    const client = await this.deps.client();
    const job = await this.snapshotJob(client, ctx);
    if (job === undefined) return [];
    const snapshotId = job.id;
    const meta = await pollSnapshot(client, snapshotId, {
      intervalMs: this.cfg.poll.interval_ms,
      timeoutMs: this.cfg.poll.timeout_s * 1000,
      signal: ctx.signal,
      onStatus: (m: SnapshotMeta) => ctx.log.info(`snapshot ${snapshotId}: ${m.status}`),
    }).catch((err: unknown) => {
      if (this.cfg.snapshot_id === undefined) throw missingJob(err, `snapshot ${snapshotId}`, job);
      throw unknownId(err, `snapshot ${snapshotId}`, 'source.snapshot_id', SNAPSHOT_ID_HINT);
    });
    if (meta.status === 'failed') {
      // Only "no records matched" comes back as failed without throwing: an empty result, not an error.
      ctx.log.warn(`snapshot ${snapshotId}: ${meta.warning ?? 'no records matched the filter'}`);
      return [];
    }
    const { format, compress, batch_size } = this.cfg.download;
    const { parts } = await client.datasets.parts(snapshotId, { format, compress, batch_size });
    ctx.log.info(`snapshot ${snapshotId}: ${meta.dataset_size ?? '?'} records in ${parts} part(s)`);
    ctx.report?.('request', `GET /datasets/snapshots/${snapshotId}/download × ${parts} (format ${format})`);
    const size = meta.dataset_size;
    return Array.from({ length: parts }, (_, i) => ({
      id: `snapshot:${snapshotId}:${format}:bs${batch_size}:part:${i + 1}`,
      // Shards split by part number, not by unit id: shards that each started their own filter job get different
      // snapshot ids, and hashing those would give some parts to no shard and others to two.
      params: { snapshot_id: snapshotId, part: i + 1, parts, shard_key: `part:${i + 1}` },
      ...(size !== undefined && { estimatedRecords: Math.max(0, Math.min(batch_size, size - i * batch_size)) }),
    }));
  }

  /** The snapshot to download: configured, checkpointed by an earlier run, or started now (paid). */
  private async snapshotJob(client: ServiceClient, ctx: SourceContext): Promise<SavedJob | undefined> {
    if (this.cfg.snapshot_id) return { id: this.cfg.snapshot_id };
    const filter = await this.effectiveFilter(ctx);
    // Checked before the paid call: the service would only say "Invalid file format" or "File not found".
    const files = await readFilterFiles(this.cfg.files, filter, ctx.baseDir);
    // Keyed by what the job would select, so editing the filter starts a new job rather than reusing a stale one.
    const key = `snapshot:job:${createHash('sha256')
      .update(JSON.stringify([this.cfg.dataset_id, filter, this.cfg.records_limit]))
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
      ctx.report?.('request', `POST /datasets/filter (paid: would start a filter job on ${this.cfg.dataset_id})`);
      ctx.report?.('note', 'units are the parts of the snapshot the filter job creates; not started by plan');
      return undefined;
    }
    const datasetId = this.cfg.dataset_id!;
    // A lost answer is resolved against the dataset's snapshot list rather than paid for twice (snapshot-reconcile.ts).
    const snapshot_id = await startFilterJobOnce({
      client,
      ctx,
      datasetId,
      attemptKey,
      post: () =>
        client.datasets
          .filter({
            dataset_id: datasetId,
            filter,
            ...(this.cfg.records_limit !== undefined && { records_limit: this.cfg.records_limit }),
            ...(files.length > 0 && { files }),
          })
          .catch((err: unknown) => {
            // The request's path does not name the dataset, so the service's bare 404 would leave the user guessing.
            if (err instanceof ServiceError && err.status === 404)
              throw new SluiceError(`dataset ${datasetId} does not exist (${err.message})`, {
                hint: 'check source.dataset_id: `sluice datasets list` shows the ids of the datasets you can filter',
                cause: err,
              });
            throw filterRefusal(err, datasetId);
          }),
    });
    failpoint('snapshot:job-started');
    const job = await saveJob(ctx.state, key, 'filter', snapshot_id);
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
  private async effectiveFilter(ctx: SourceContext): Promise<Record<string, unknown> | undefined> {
    const inc = this.cfg.incremental;
    if (inc === undefined) return this.cfg.filter;
    const key = `snapshot:cursor:${inc.cursor}`;
    let after = ctx.state.get<string | number>(key);
    if (after === undefined) {
      // A checkpoint from the future (committed before cursors were bounded) is not a lower bound either.
      const future: string[] = [];
      const accepts = (v: string | number): boolean => this.bound.accepts(v, ctx) || (future.push(String(v)), false);
      after = lastCursorValue(ctx.checkpoints, inc.cursor, accepts) ?? inc.initial;
      if (future.length > 0)
        ctx.log.warn(
          `incremental: committed ${inc.cursor} ${JSON.stringify(future.sort().at(-1))} is later than ${this.bound.describe()}: not used as the lower bound`,
        );
      if (!ctx.dryRun) await ctx.state.set(key, after);
    }
    const filter = withCursor(this.cfg.filter, inc.cursor, after)!;
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

  async rawFile(unit: WorkUnit, ctx: SourceContext, tmpDir: string): Promise<RawFile> {
    const file = path.join(tmpDir, `${tempFileStem(unit.id)}.${this.cfg.download.format}`);
    await pipeline(
      Readable.from(countBytes((await this.download(unit, ctx)).body, ctx.counters)),
      // Raw records, until the unit is loaded: the user's alone.
      createWriteStream(file, { mode: PRIVATE_FILE }),
    );
    return { path: file, decode: this.decodeOptions, temporary: true };
  }

  private async download(unit: WorkUnit, ctx: SourceContext): Promise<Download> {
    const client = await this.deps.client();
    const { format, compress, batch_size } = this.cfg.download;
    const id = unit.params.snapshot_id as string;
    // A download may still answer 202 after the status said ready: waited out within the poll timeout (§1.2).
    return client.datasets.download(
      id,
      { format, compress, batch_size, part: unit.params.part as number },
      {
        notReadyWaitMs: this.cfg.poll.timeout_s * 1000,
        signal: ctx.signal,
        onNotReady: ({ delayMs }) =>
          ctx.log.warn(
            `snapshot ${id} part ${String(unit.params.part)}: still building; asking again in ${Math.ceil(delayMs / 1000)} s`,
          ),
      },
    );
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
    const dl = await this.download(unit, ctx);
    const batches = decode(countBytes(dl.body, ctx.counters), {
      ...this.decodeOptions,
      unit: unit.id,
      deadLetter: ctx.deadLetter,
    });
    const cursor = this.cfg.incremental?.cursor;
    if (cursor === undefined) return yield* batches;
    // A read again (retry) starts over: its checkpoint is that of the rows it yields this time.
    this.maxima.delete(unit.id);
    let rejected: { count: number; first: string } | undefined;
    for await (const batch of batches) {
      let max = this.maxima.get(unit.id);
      for (const row of batch) {
        const v = row[cursor];
        if ((typeof v !== 'string' && typeof v !== 'number') || (max !== undefined && compareCursor(v, max) <= 0))
          continue;
        if (this.bound.accepts(v, ctx)) max = v;
        else if (rejected) rejected.count++;
        else rejected = { count: 1, first: String(v) };
      }
      if (max !== undefined) this.maxima.set(unit.id, max);
      yield batch;
    }
    const part = `snapshot ${String(unit.params.snapshot_id)} part ${String(unit.params.part)}`;
    if (rejected) ctx.log.warn(rejectedCursorWarning(part, cursor, rejected, this.bound));
  }
}

/**
 * A unit's download file name: its id made safe, and short whatever the service answered as a snapshot id (an id of
 * hundreds of characters would exceed the file system's name limit).
 */
function tempFileStem(unitId: string): string {
  const safe = unitId.replace(/[^a-zA-Z0-9_.-]/g, '_');
  if (safe.length <= 120) return safe;
  return `${safe.slice(0, 100)}-${createHash('sha256').update(unitId).digest('hex').slice(0, 16)}`;
}

/** Cursor values compare as dates when both are date strings, as numbers when both are numbers, else as text. */
export function compareCursor(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const da = typeof a === 'string' ? Date.parse(a) : NaN;
  const db = typeof b === 'string' ? Date.parse(b) : NaN;
  if (!Number.isNaN(da) && !Number.isNaN(db)) return da - db;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

/** The largest value of `cursor` among the committed checkpoints; undefined when none has one. */
export function lastCursorValue(
  checkpoints: ReadonlyMap<string, unknown> | undefined,
  cursor: string,
  accepts: (value: string | number) => boolean = () => true,
): string | number | undefined {
  let last: string | number | undefined;
  for (const cp of checkpoints?.values() ?? []) {
    const c = cp as Partial<CursorCheckpoint> | null;
    if (c?.cursor !== cursor || (typeof c.max !== 'string' && typeof c.max !== 'number')) continue;
    if (!accepts(c.max)) continue;
    if (last === undefined || compareCursor(c.max, last) > 0) last = c.max;
  }
  return last;
}

export const snapshotSource: ComponentDef<'source', SnapshotConfig, Source> = {
  kind: 'source',
  type: 'snapshot',
  description: 'A dataset snapshot: filter job → poll → download in parts (each part one work unit).',
  schema: snapshotSchema as unknown as z.ZodType<SnapshotConfig>,
  create: (cfg, deps) => new SnapshotSource(cfg, deps),
};
