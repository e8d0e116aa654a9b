/**
 * Dataset snapshots: filter job → poll → download in parts. Each part (`batch_size` records) is one work unit, so a
 * failed run re-downloads only the parts that did not commit. The filter job is paid: its snapshot id is
 * checkpointed the moment the service answers, and a rerun polls that snapshot instead of starting a second job. A
 * snapshot the service no longer knows or serves (expired after 30 days, whatever status says so) is a
 * MissingJobError, for the engine's `resume.on_missing_job`. A filter that matches nothing is an empty result, in
 * either of the service's ways of saying it (a 422 up front, a `failed` snapshot with `no_records_found`): the run
 * loads nothing and succeeds. A filter job needs `records_limit` (or an explicit `uncapped: true`): the service
 * charges for every record it places in the snapshot, and without a limit there is no cap.
 *
 * `incremental: {cursor, initial}` adds `<cursor> > <last value>` to the filter, so the service builds (and charges
 * for) only records newer than those loaded: the last value is the largest cursor value the sinks committed
 * (each part's checkpoint is the largest it held), `initial` on a first run. A backfill (`sluice run --from`) filters
 * a window of the cursor instead and leaves the nightly cursor where it was (snapshot-cursor.ts). The filter job and
 * the filter it runs are snapshot-filter-job.ts; this file plans the parts and reads them.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { pollSnapshot } from '../client/poll.js';
import { type Download, type DownloadWait, type SnapshotMeta } from '../client/index.js';
import type { DecodeBounds } from '../core/limits.js';
import type {
  BackfillWindow,
  Batch,
  RawDecodeOptions,
  RawFile,
  Source,
  SourceContext,
  UnitEnd,
  WorkUnit,
} from '../core/types.js';
import { fileReferences, type ComponentDef, type ComponentDeps } from '../contracts/component.js';
import { checkedBytes, decode } from '../decode/index.js';
import { countBytes, downloadBounds } from './bytes.js';
import { PRIVATE_FILE } from '../core/private-files.js';
import { CursorBound, rejectedCursorWarning } from './cursor-bound.js';
import {
  compareKeys,
  cursorKind,
  readCursorValue,
  unreadableCursorWarning,
  type CursorReading,
} from './cursor-value.js';
import { rawDecodeOptions } from './raw-decode.js';
import { filterFieldNames } from './filter.js';
import { unknownId } from './unknown-id.js';
import { checkDataset, keyRefused, warnUnknownFields, type DatasetFieldNames } from './preflight.js';
import { nothingMatched, snapshotJob } from './snapshot-filter-job.js';
import { missingJob, type SavedJob } from './saved-job.js';

import { snapshotSchema, type SnapshotConfig } from './snapshot-schema.js';
import { snapshotBackfill, type CursorCheckpoint } from './snapshot-cursor.js';

export { snapshotDownloadSchema, snapshotSchema, type SnapshotConfig } from './snapshot-schema.js';
export { compareCursor, lastCursorValue } from './snapshot-cursor.js';

const SNAPSHOT_ID_HINT =
  'the id of a snapshot of this account (`sluice datasets snapshot <id>` looks one up; snapshots are kept 30 days)';

class SnapshotSource implements Source {
  readonly concurrency: number;
  readonly incremental: boolean;
  /**
   * Only without a cursor: an incremental part's checkpoint is the largest cursor value among its rows, which only
   * reading them in JS tells.
   */
  readonly rawFile?: (unit: WorkUnit, ctx: SourceContext, tmpDir: string) => Promise<RawFile>;
  /** The latest value a run takes as its cursor (cursor-bound.ts). */
  private readonly bound: CursorBound;
  /** What a part's bytes are: the same for `read()` and `rawFile()`. */
  private readonly decodeOptions: RawDecodeOptions;
  /** The dataset's fields when its metadata answered in the preflight (a hint; most datasets have none). */
  private knownFields: DatasetFieldNames;
  /** A backfill run's window (`SourceContext.backfill`), which its parts' checkpoints carry. */
  private window: BackfillWindow | undefined;

  constructor(
    private readonly cfg: SnapshotConfig,
    private readonly deps: ComponentDeps,
  ) {
    this.concurrency = cfg.concurrency;
    this.incremental = cfg.incremental !== undefined;
    this.bound = new CursorBound(cfg.incremental?.max_ahead_s);
    if (!this.incremental) this.rawFile = (unit, ctx, tmpDir) => this.downloadToFile(unit, ctx, tmpDir);
    this.decodeOptions = rawDecodeOptions(cfg.download.format);
  }

  /**
   * Free checks before anything is paid: the configured snapshot exists, or the dataset a filter job would run on
   * (its field names are checked too when its metadata answers, as warnings: a hint, not a verdict).
   */
  async preflight(ctx: SourceContext): Promise<void> {
    const client = await this.deps.client();
    const id = this.cfg.snapshot_id;
    if (id === undefined) {
      this.knownFields = await checkDataset(client, this.cfg.dataset_id!, ctx.log);
      const cursor = this.cfg.incremental?.cursor;
      const named = [...filterFieldNames(this.cfg.filter), ...(cursor !== undefined ? [cursor] : [])];
      if (this.knownFields !== undefined) warnUnknownFields(named, this.knownFields, ctx.log);
      return;
    }
    await client.datasets.snapshot(id).catch((err: unknown) => {
      throw keyRefused(unknownId(err, `snapshot ${id}`, 'source.snapshot_id', SNAPSHOT_ID_HINT));
    });
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    this.bound.start(ctx);
    this.window = ctx.backfill;
    const client = await this.deps.client();
    const job = await snapshotJob({ cfg: this.cfg, bound: this.bound, knownFields: this.knownFields }, client, ctx);
    if (job === undefined) return [];
    const snapshotId = job.id;
    const meta = await pollSnapshot(client, snapshotId, {
      intervalMs: this.cfg.poll.interval_ms,
      timeoutMs: this.cfg.poll.timeout_s * 1000,
      signal: ctx.signal,
      onStatus: (m: SnapshotMeta) => ctx.log.info(`snapshot ${snapshotId}: ${m.status}`),
    }).catch((err: unknown) => {
      throw this.jobGone(err, snapshotId, job);
    });
    if (meta.status === 'failed') {
      // Only "no records matched" comes back as failed without throwing: an empty result, not an error.
      nothingMatched(this.cfg, ctx, `snapshot ${snapshotId}: ${meta.warning ?? 'no records matched the filter'}`);
      return [];
    }
    // The service charges the snapshot's records once it is ready (docs/service.md §2.4): this run's bill if it
    // started the job.
    if (meta.dataset_size !== undefined) await ctx.paid.charged(snapshotId, meta.dataset_size);
    const { format, compress, batch_size } = this.cfg.download;
    // Parts can say "not ready" after the status said ready, as downloads can: waited out within the poll timeout.
    const { parts } = await client.datasets
      .parts(snapshotId, { format, compress, batch_size }, this.notReadyWait(ctx, `snapshot ${snapshotId} parts`))
      .catch((err: unknown) => {
        throw this.jobGone(err, snapshotId, job);
      });
    ctx.log.info(`snapshot ${snapshotId}: ${meta.dataset_size ?? '?'} records in ${parts} part(s)`);
    this.checkFull(ctx, snapshotId, meta);
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

  /** The service no longer knows or serves the snapshot: the saved job is missing, or the configured id is wrong. */
  private jobGone(err: unknown, snapshotId: string, job: SavedJob): unknown {
    if (this.cfg.snapshot_id === undefined) return missingJob(err, `snapshot ${snapshotId}`, job);
    return unknownId(err, `snapshot ${snapshotId}`, 'source.snapshot_id', SNAPSHOT_ID_HINT);
  }

  /**
   * A snapshot holding `records_limit` records may have left matching records out. For an incremental load that can
   * lose records for good: the next run starts after the largest cursor value loaded.
   */
  private checkFull(ctx: SourceContext, snapshotId: string, meta: SnapshotMeta): void {
    const limit = this.cfg.records_limit;
    if (limit === undefined || meta.dataset_size === undefined || meta.dataset_size < limit) return;
    const inc = this.cfg.incremental;
    if (inc === undefined)
      ctx.log.info(`snapshot ${snapshotId} holds records_limit (${limit}) records: the filter may match more`);
    else if (this.window !== undefined)
      ctx.log.warn(
        `snapshot ${snapshotId} holds records_limit (${limit}) records: the window may hold more, which this backfill ` +
          'does not load: narrow the window (--from/--to) or raise source.records_limit',
      );
    else
      ctx.log.warn(
        `snapshot ${snapshotId} holds records_limit (${limit}) records: more may match, and the next run starts after ` +
          `the largest ${inc.cursor} loaded, so a record left out with a smaller ${inc.cursor} would never be loaded: ` +
          'raise source.records_limit above what one run collects',
      );
  }

  /** How downloads and parts counts wait out "not ready": within the poll timeout, at the poll's cadence. */
  private notReadyWait(ctx: SourceContext, what: string): DownloadWait {
    return {
      notReadyWaitMs: this.cfg.poll.timeout_s * 1000,
      intervalMs: this.cfg.poll.interval_ms,
      signal: ctx.signal,
      onNotReady: ({ delayMs, message }) =>
        ctx.log.warn(`${what}: not ready yet ("${message}"); asking again in ${Math.ceil(delayMs / 1000)} s`),
    };
  }

  /**
   * The part on disk for a sink's native reader: decompressed and checked on the way under the unit's bounds
   * (decode/checked-bytes.ts), so the file a sink reads holds no line over the record size limit and no more
   * records than announced. Plain bytes on disk also spare the sink decompressing them again.
   */
  private async downloadToFile(unit: WorkUnit, ctx: SourceContext, tmpDir: string): Promise<RawFile> {
    const file = path.join(tmpDir, `${tempFileStem(unit.id)}.${this.cfg.download.format}`);
    const bounds = this.bounds(ctx);
    const body = countBytes((await this.download(unit, ctx)).body, ctx.counters);
    const checked = checkedBytes(body, { ...this.decodeOptions, unit: unit.id, deadLetter: ctx.deadLetter, bounds });
    // Raw records, until the unit is loaded: the user's alone.
    await pipeline(Readable.from(checked), createWriteStream(file, { mode: PRIVATE_FILE }));
    return { path: file, decode: { ...this.decodeOptions, bounds }, temporary: true };
  }

  /** A part holds `batch_size` records (the last one fewer): the service's own account, checked as it is read. */
  private bounds(ctx: SourceContext): DecodeBounds {
    return downloadBounds(ctx, { count: this.cfg.download.batch_size, by: "the download's batch_size" });
  }

  private async download(unit: WorkUnit, ctx: SourceContext): Promise<Download> {
    const client = await this.deps.client();
    const { format, compress, batch_size } = this.cfg.download;
    const id = unit.params.snapshot_id as string;
    // A download may still say "not ready" after the status said ready: waited out within the poll timeout (§1.2).
    return client.datasets
      .download(
        id,
        { format, compress, batch_size, part: unit.params.part as number },
        this.notReadyWait(ctx, `snapshot ${id} part ${String(unit.params.part)}`),
      )
      .catch((err: unknown) => {
        // Gone since the plan (it expired meanwhile): said as such rather than as a bare 400.
        throw this.jobGone(err, id, { id });
      });
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd | void> {
    const dl = await this.download(unit, ctx);
    const batches = decode(countBytes(dl.body, ctx.counters), {
      ...this.decodeOptions,
      unit: unit.id,
      deadLetter: ctx.deadLetter,
      bounds: this.bounds(ctx),
    });
    const inc = this.cfg.incremental;
    if (inc === undefined) return yield* batches;
    const { cursor } = inc;
    const kind = cursorKind(inc.initial);
    // The part's checkpoint is the largest cursor value among the rows this read yields (a read again starts over).
    let max: CursorReading | undefined;
    let rejected: { count: number; first: string } | undefined;
    let unreadable: { count: number; first: unknown; problem: string } | undefined;
    for await (const batch of batches) {
      for (const row of batch) {
        const v = row[cursor];
        if (v === undefined || v === null) continue;
        const read = readCursorValue(v, kind);
        if ('problem' in read) {
          if (unreadable) unreadable.count++;
          else unreadable = { count: 1, first: v, problem: read.problem };
          continue;
        }
        if (max !== undefined && compareKeys(read.key, max.key) <= 0) continue;
        if (this.bound.accepts(read.value, ctx)) max = read;
        else if (rejected) rejected.count++;
        else rejected = { count: 1, first: String(v) };
      }
      yield batch;
    }
    const part = `snapshot ${String(unit.params.snapshot_id)} part ${String(unit.params.part)}`;
    if (rejected) ctx.log.warn(rejectedCursorWarning(part, cursor, rejected, this.bound));
    if (unreadable) ctx.log.warn(unreadableCursorWarning(part, cursor, kind, unreadable));
    if (max === undefined) return {};
    const w = this.window;
    const checkpoint: CursorCheckpoint = {
      cursor,
      max: max.value,
      ...(w && { backfill: { from: w.from, ...(w.to !== undefined && { to: w.to }) } }),
    };
    return { checkpoint };
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

export const snapshotSource: ComponentDef<'source', SnapshotConfig, Source> = {
  kind: 'source',
  type: 'snapshot',
  description: 'A dataset snapshot: filter job → poll → download in parts (each part one work unit).',
  schema: snapshotSchema as unknown as z.ZodType<SnapshotConfig>,
  create: (cfg, deps) => new SnapshotSource(cfg, deps),
  backfill: snapshotBackfill,
  files: (cfg) =>
    fileReferences(['files'], cfg.files, 'file', 'a filter-values file (CSV or JSON) uploaded with the filter job'),
};
