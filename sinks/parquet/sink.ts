/**
 * `parquet` sink: Parquet files written by DuckDB's writer (`COPY … TO … (FORMAT parquet)`), with native
 * STRUCT / LIST / TIMESTAMP / DATE columns from the inferred schema.
 *
 * How files reach the target size: units are often small (a 1,000-record snapshot part is ~0.3 MB of Parquet), and
 * one file per unit would leave thousands of tiny files. So a unit is committed by *staging* it: its rows go to a
 * synced NDJSON file under `.sluice-staged/`, recorded in the manifest as committed-but-staged (exactly-once holds
 * from that moment). When the staged data would make a file of about the target size — and always in `finish()` —
 * the staged units are published together: one `COPY` reads them all (`read_json` with the merged schema) and
 * writes target-size Parquet files to `.sluice-tmp/`, which are recorded in the manifest in one atomic manifest swap
 * and then renamed into place; the staged files are then deleted. Readers only ever see complete, full-size files
 * (the last one of a run may be smaller) and never a duplicate; staging costs no second Parquet encode, and the
 * manifest-listed staging files survive a crash. With `partition_by`, one publish writes a file per partition
 * present, so files are smaller by the number of partitions (raise `target_file_mb` to compensate).
 *
 * One dataset across runs: every file is written with the dataset's columns (the manifest's `schema`, joined with
 * the staged units' and the declared columns; output-files/dataset-schema.ts), so
 * `read_parquet('<path>/**\/*.parquet', union_by_name = true)` gives the rows and types the DuckDB sink's table
 * has for the same data. DuckDB's union widens older files as the table's ALTERs did, except into text and JSON,
 * where a value's text depends on the path it took: a publish that widens a column into VARCHAR or JSON rewrites
 * the earlier files that need it (`rewriteIfNeeded`), under their own names, in the publish's manifest swap.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { EXIT_CODES, SluiceError } from '../../src/core/errors.js';
import { failpoint } from '../../src/core/failpoints.js';
import type {
  Batch,
  CommitResult,
  CompactSummary,
  Logger,
  RawFile,
  RecordCheck,
  Sink,
  SinkCapabilities,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { duckdbType } from '../../src/schema/duckdb-types.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { RecordJudge, unstorablePolicy } from '../../src/schema/storable.js';
import {
  deserializeColumns,
  joinDataset,
  schemaChanges,
  serializeColumns,
} from '../../src/sink-kit/output-files/dataset-schema.js';
import { compactOutput } from '../../src/sink-kit/output-files/compact.js';
import { publishFailed, stageUnit, type FileSinkOptions } from '../../src/sink-kit/output-files/file-sink.js';
import { FileSinkBase, fileSinkDef, type OpenedFileSink } from '../../src/sink-kit/output-files/file-sink-base.js';
import type { Manifest } from '../../src/sink-kit/output-files/manifest.js';
import { Mutex } from '../../src/core/concurrency.js';
import { writeNdjson } from '../../src/sink-kit/output-files/ndjson-writer.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { outputRoot, type OutputDir } from '../../src/sink-kit/output-files/output-dir.js';
import { unitFileStem } from '../../src/sink-kit/output-files/unit-file-name.js';
import { copyCheckedJsonl } from '../../src/sink-kit/raw-jsonl/checked-copy.js';
import { maxLineBytesOf } from '../../src/sink-kit/raw-jsonl/lines.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../../src/sink-kit/raw-jsonl/refusal.js';
import { DEFAULT_TARGET_FILE_MB, parquetLimits, parquetSinkSchema, type ParquetSinkConfig } from './config.js';
import { PublishesBeside } from './beside.js';
import { publishStaged } from './publish.js';
import { restageRaw, restageUnjudged } from './restage.js';
import { compactParquet, readJsonRefused } from './write-files.js';

/** Staged NDJSON bytes per Parquet byte before any publish has measured it (company profiles, zstd: ~6). */
const INITIAL_JSON_PER_PARQUET = 6;

/**
 * DuckDB threads of the publish in `finish()`, when no unit is staging any more: the run's last file is written with
 * two cores (the other publishes run beside the JS pass, on one). Not more: each thread holds row groups of its own
 * (200k company profiles: peak RSS 515 MB with one thread, 610–784 MB with two).
 */
const FINISH_THREADS = Math.min(2, os.availableParallelism());

/** How the registry (or a test) makes the sink. */
export type ParquetSinkOptions = FileSinkOptions;

/** What the sink holds while open: the output, and an in-memory DuckDB that converts staged files to Parquet. */
interface OpenedParquet extends OpenedFileSink {
  db: DuckDBInstance;
  conn: DuckDBConnection;
}

export class ParquetSink extends FileSinkBase<ParquetSinkConfig, OpenedParquet> implements Sink {
  /**
   * Parquet is written by DuckDB from staged NDJSON: rows sluice wrote, or (native path) a unit's raw JSONL lines,
   * staged as they came once each is judged, not parsed into rows and written out again.
   */
  readonly capabilities: SinkCapabilities;
  private readonly publishing = new Mutex();
  /**
   * The dataset's columns by manifest version (`dataset()`): joining every staged unit's schema at each commit
   * would cost thousands of joins per unit while a target-size file gathers.
   */
  private readonly datasets = new WeakMap<Manifest, Map<string, LogicalType> | undefined>();
  private readonly targetBytes: number;
  private jsonPerParquet = INITIAL_JSON_PER_PARQUET;
  /** Publishes commits start, run beside the next units' staging (beside.ts). */
  private readonly beside = new PublishesBeside((err) =>
    this.opened().ctx.log.warn(publishFailed('parquet sink', err)),
  );

  constructor(config: ParquetSinkConfig, options: ParquetSinkOptions = {}) {
    // Every published file, partition columns read back from the directory names.
    super(config, options, 'parquet', {
      pattern: '*.parquet',
      reader: (glob) => `read_parquet(${glob}, hive_partitioning = true, union_by_name = true)`,
      countIsCheap: true,
    });
    this.targetBytes =
      config.file_size_bytes ?? Math.round((config.target_file_mb ?? DEFAULT_TARGET_FILE_MB) * 2 ** 20);
    this.capabilities = {
      files: this.fileOutput(),
      limits: parquetLimits(config, outputRoot(path.resolve(options.baseDir ?? '.'), config.path)),
      native: { formats: ['jsonl'], load: (unit, file, commit, check) => this.stageFile(unit, file, commit, check) },
    };
  }

  typeName(t: LogicalType): string {
    return duckdbType(t);
  }

  async open(ctx: SinkContext): Promise<void> {
    this.refuseDeclaredPartitions(ctx);
    const out = await this.openOutput(ctx);
    // An in-memory database of its own: it only converts files, and must not lock any database file.
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    this.setOpened({ ctx, out, db, conn });
    await conn.run(`SET TimeZone = 'UTC'`);
    // One thread, freed memory handed back: the JS pass that stages the next units keeps the other core busy.
    // Measured over 200k company profiles (`npm run bench -- --only sluice-parquet`, five runs each): peak RSS
    // 695–742 → 484–561 MB; wall 7.4–9.5 → 8.4–9.4 s, CPU 9.9–12.7 → 9.3–10.5 s. A memory limit would bound it
    // further (256 MB: 526 MB) but makes a publish of wide rows fail where DuckDB could have finished it (128 MB
    // ran out of memory; 192 MB spilled, 1.6× slower).
    await conn.run('SET threads = 1');
    await conn.run(`SET allocator_flush_threshold = '32MB'`);
    // Freed pages handed back between publishes too, not only when the next one allocates: peak RSS over 1M company
    // profiles 486–707 MB without, 537–615 MB with, the time the same (22–24 s); over 10M 739 → 641–650 MB.
    await conn.run('SET allocator_background_threads = true');
    await restageUnjudged(out, {
      judge: this.judge(),
      deadLetter: ctx.deadLetter,
      log: ctx.log,
      stage: `sink:${this.describe()}`,
      label: 'parquet sink',
    });
  }

  protected override release(s: OpenedParquet): void {
    s.conn.closeSync();
    s.db.closeSync();
  }

  /** A judge of this sink's limits that knows the published columns, for units staged without one. */
  private judge(): RecordJudge {
    const judge = new RecordJudge(this.capabilities.limits!, unstorablePolicy(this.config));
    const published = this.opened().out.manifest.schema;
    if (published) judge.know(deserializeColumns(published));
    return judge;
  }

  /** A declared partition column that is a list or struct could never be published: said before anything is. */
  private refuseDeclaredPartitions(ctx: SinkContext): void {
    for (const col of this.config.partition_by ?? []) {
      const t = ctx.declared?.find((c) => c.name === col)?.type;
      if (t?.kind === 'list' || t?.kind === 'struct')
        throw new SluiceError(`parquet sink: partition column "${col}" is declared a ${t.kind.toUpperCase()}`, {
          hint: 'partition by top-level scalar fields (e.g. `partition_by: [country_code]`), or flatten the field first',
          exitCode: EXIT_CODES.config,
        });
    }
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    return this.stage(unit, commit, async (file, schema) => {
      const written = await writeNdjson(batches, file, { schema, sync: true });
      return { rows: written.rows, bytes: written.bytes, longest: written.longestLine };
    });
  }

  /**
   * Native path: the unit's JSONL file (gzip or not) staged as plain text, its lines as they came, each checked to
   * be one JSON object and judged by `check` on the way (raw-jsonl/checked-copy.ts). A line DuckDB's reader would
   * still refuse (a key twice in an object, which JSON.parse takes as its last value) is found by the publish that
   * reads it, which writes the unit again from its rows first (`restageRaw`).
   */
  private async stageFile(
    unit: WorkUnit,
    file: RawFile,
    commit: UnitCommit,
    check: RecordCheck | undefined,
  ): Promise<CommitResult> {
    refuseUnlessJsonl('parquet sink', file);
    const judge = check ?? this.judge();
    return this.stage(unit, commit, async (staged, schema) => {
      try {
        const copied = await copyCheckedJsonl(file.path, staged, undefined, {
          schema,
          check: judge,
          maxLineBytes: maxLineBytesOf(file),
        });
        return { rows: copied.records, bytes: (await stat(staged)).size, longest: copied.longest, raw: true };
      } catch (err) {
        throw asNativeRefusal('parquet sink', err);
      }
    });
  }

  /** Commits a unit by staging it (output-files/file-sink.ts): `write` puts its lines into the staging file. */
  private stage(
    unit: WorkUnit,
    commit: UnitCommit,
    write: (
      file: string,
      schema: InferredSchema,
    ) => Promise<{ rows: number; bytes: number; longest: number; raw?: true }>,
  ): Promise<CommitResult> {
    const out = this.opened().out;
    if (out.isCommitted(unit.id)) return Promise.resolve({ committed: false, records: 0 });
    return stageUnit(out, unit, commit, {
      name: `${unitFileStem(unit.id)}.${randomBytes(4).toString('hex')}.staged`,
      write: async (file, schema) => {
        const written = await write(file, schema);
        // The engine's store gate judged every record (schema/storable.ts): this is a last guard.
        const cases = schema.conflicts.caseConflicts();
        if (cases.length > 0)
          throw new SluiceError(
            `parquet sink: field names that differ only in case: ${cases.map((c) => `${c.path} (${c.seen.join(' / ')})`).join(', ')}`,
            { hint: 'Parquet readers match names ignoring case: rename one of each pair with the `rename` transform' },
          );
        if (schema.conflicts.size > 0)
          this.opened().ctx.log.warn(`parquet sink: unit ${unit.id}: ${schema.conflicts.format()}`);
        failpoint('parquet:staged');
        return written;
      },
      // Each staged unit keeps its columns: the publish that writes its file joins them.
      stagedColumns: (schema) => serializeColumns(schema.columns),
      joinColumns: (m, schema) => {
        // Under the commit lock: the dataset as committed just before this unit, whichever units ran beside it.
        const before = this.dataset(out.manifest);
        const after = joinDataset([...(before ? [before] : []), schema.columns], this.opened().ctx.declared).columns;
        // `m` is the manifest once this commit is done: the next unit starts from here, not from every part.
        this.datasets.set(m, after);
        return after ? schemaChanges(before, after, (t) => this.typeName(t)) : [];
      },
      publishing: { stagedEnough: () => this.stagedEnough(), publish: () => this.publishBeside() },
      label: 'parquet sink',
      log: this.opened().ctx.log,
    });
  }

  /** The dataset's columns: of the published files and the staged units, with the declared ones. */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    return this.dataset(this.opened().out.manifest);
  }

  /** `sluice compact`: with a DuckDB of its own, as no run has one open. */
  protected override async compactAlone(out: OutputDir, log: Logger): Promise<CompactSummary> {
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      await conn.run(`SET TimeZone = 'UTC'`);
      await conn.run('SET threads = 1');
      return await this.compactOn(conn, out, 2, log);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  }

  protected compactWith(out: OutputDir, minFiles: number, log: Logger): Promise<CompactSummary> {
    return this.compactOn(this.opened().conn, out, minFiles, log);
  }

  private compactOn(conn: DuckDBConnection, out: OutputDir, minFiles: number, log: Logger): Promise<CompactSummary> {
    const order = (out.manifest.schema ?? []).map(([k]) => k);
    const targetBytes = this.targetBytes;
    return compactOutput(out, {
      targetBytes,
      minFiles,
      ext: '.parquet',
      label: 'parquet sink',
      log,
      rewrite: (inputs, dir, publishId) =>
        compactParquet(conn, this.config, { inputs, dir, publishId, targetBytes, order }),
    });
  }

  /**
   * The columns the files of `m` have once its staged units are published (dataset-schema.ts); undefined while no
   * unit holds a row.
   */
  private dataset(m: Manifest): Map<string, LogicalType> | undefined {
    if (this.datasets.has(m)) return this.datasets.get(m);
    const parts: Map<string, LogicalType>[] = [];
    if (m.schema) parts.push(deserializeColumns(m.schema));
    for (const u of Object.values(m.units)) if (u.staged) parts.push(deserializeColumns(u.staged.schema));
    const columns = parts.length === 0 ? undefined : joinDataset(parts, this.opened().ctx.declared).columns;
    this.datasets.set(m, columns);
    return columns;
  }

  /** Staged rows would make a file of about the target size. */
  private stagedEnough(files = 1): boolean {
    let n = 0;
    for (const u of Object.values(this.opened().out.manifest.units)) n += u.staged?.bytes ?? 0;
    return n >= files * this.targetBytes * this.jsonPerParquet;
  }

  /** A publish a commit made due, beside the next units' staging; a commit waits once two files' worth is staged. */
  private publishBeside(): Promise<void> {
    return this.beside.start(
      () => this.publish(false),
      () => this.stagedEnough(2),
    );
  }

  override async close(): Promise<void> {
    // DuckDB's connection is closed by `release`: a publish still writing with it ends first.
    await this.beside.ended();
    await super.close();
  }

  /**
   * Every staged unit → target-size Parquet files, moved into place with one manifest swap. Unless `all`, only
   * when enough is staged: units that triggered a publish while another was running must not make a small file.
   */
  protected publish(all: boolean): Promise<void> {
    return this.publishing.run(async () => {
      if (!all && !this.stagedEnough()) return;
      const { conn } = this.opened();
      if (all) await conn.run(`SET threads = ${FINISH_THREADS}`);
      try {
        await this.publishStaged();
      } catch (err) {
        const out = this.opened().out;
        const raw = Object.entries(out.manifest.units).flatMap(([id, u]) => (u.staged?.raw ? [id] : []));
        if (raw.length === 0 || !readJsonRefused(err)) throw err;
        // Text only DuckDB's reader refuses, in units staged as they came: staged again from their rows, once.
        await restageRaw(out, raw, this.opened().ctx.log, 'parquet sink');
        await this.publishStaged();
      } finally {
        if (all) await conn.run('SET threads = 1');
      }
    });
  }

  /** One publish of every staged unit (see `publish`), under the publishing lock. */
  private async publishStaged(): Promise<void> {
    const { out, conn, ctx } = this.opened();
    const measured = await publishStaged({
      out,
      conn,
      config: this.config,
      log: ctx.log,
      declared: ctx.declared,
      targetBytes: this.targetBytes,
    });
    if (measured) this.jsonPerParquet = Math.max(1, measured.jsonBytes / measured.parquetBytes);
  }
}

export const parquetSink = fileSinkDef<ParquetSinkConfig>({
  type: 'parquet',
  description: 'Parquet files (zstd, optionally hive-partitioned) of about a target size, with a manifest.',
  schema: parquetSinkSchema,
  make: (config, options) => new ParquetSink(config, options),
});
