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
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import { failpoint } from '../../src/core/failpoints.js';
import type { ComponentDef, ComponentDeps } from '../../src/core/component.js';
import type {
  Batch,
  CommitResult,
  OutputQuery,
  Sink,
  SinkCapabilities,
  SinkContext,
  WorkUnit,
} from '../../src/core/types.js';
import { duckdbType, quoteString } from '../../src/schema/duckdb-types.js';
import { InferredSchema } from '../../src/schema/infer.js';
import { deserializeType, serializeType, type LogicalType } from '../../src/schema/logical-type.js';
import { displayPath } from '../display-path.js';
import type { ManifestUnit } from '../output-files/manifest.js';
import { Mutex } from '../output-files/mutex.js';
import { writeNdjson } from '../output-files/ndjson-writer.js';
import {
  CommitIncompleteError,
  OutputDir,
  outputLockPath,
  STAGED_DIR,
  type FileSinkHooks,
  type Move,
} from '../output-files/output-dir.js';
import { unitFileStem } from '../output-files/unit-file-name.js';
import { DEFAULT_TARGET_FILE_MB, parquetSinkSchema, type ParquetSinkConfig } from './config.js';
import { copyToParquet, emptyFiles, listFiles } from './write-files.js';

/** Staged NDJSON bytes per Parquet byte before any publish has measured it (company profiles, zstd: ~6). */
const INITIAL_JSON_PER_PARQUET = 6;

export interface ParquetSinkOptions {
  /** The pipeline file's directory, which `path` is relative to; describe() shows `path` as written without it. */
  baseDir?: string;
  hooks?: FileSinkHooks;
}

export class ParquetSink implements Sink {
  /** Rows only: Parquet is written by DuckDB from staged NDJSON that sluice wrote itself. */
  readonly capabilities: SinkCapabilities = { nativeFormats: [] };
  private ctx: SinkContext | undefined;
  private out: OutputDir | undefined;
  private db: DuckDBInstance | undefined;
  private conn: DuckDBConnection | undefined;
  private readonly publishing = new Mutex();
  private readonly targetBytes: number;
  private jsonPerParquet = INITIAL_JSON_PER_PARQUET;
  private readonly baseDir: string | undefined;
  private readonly hooks: FileSinkHooks;

  constructor(
    private readonly config: ParquetSinkConfig,
    options: ParquetSinkOptions = {},
  ) {
    this.targetBytes =
      config.file_size_bytes ?? Math.round((config.target_file_mb ?? DEFAULT_TARGET_FILE_MB) * 2 ** 20);
    this.baseDir = options.baseDir;
    this.hooks = options.hooks ?? {};
  }

  typeName(t: LogicalType): string {
    return duckdbType(t);
  }

  describe(): string {
    return `parquet ${displayPath(this.config.path, this.baseDir)}`;
  }

  /** Every published file, partition columns read back from the directory names. */
  outputQuery(limit: number): OutputQuery {
    const files = path.join(path.resolve(this.baseDir ?? '.', this.config.path), '**', '*.parquet');
    return {
      sql: `SELECT * FROM read_parquet(${quoteString(files)}, hive_partitioning = true, union_by_name = true) LIMIT ${limit}`,
    };
  }

  /** Two pipelines writing to one directory would each remove the other's temp files as orphans. */
  lockPath(baseDir: string): string {
    return outputLockPath(path.resolve(baseDir, this.config.path), this.config.write);
  }

  async open(ctx: SinkContext): Promise<void> {
    this.ctx = ctx;
    this.out = await OutputDir.open({
      root: path.resolve(ctx.baseDir, this.config.path),
      mode: this.config.write,
      fresh: ctx.fresh,
      pipeline: ctx.pipeline,
      format: 'parquet',
      label: 'parquet sink',
      log: ctx.log,
      hooks: this.hooks,
    });
    await mkdir(this.out.stagedDir, { recursive: true });
    // An in-memory database of its own: it only converts files, and must not lock any database file.
    this.db = await DuckDBInstance.create(':memory:');
    this.conn = await this.db.connect();
    await this.conn.run(`SET TimeZone = 'UTC'`);
    // One thread, freed memory handed back: the JS pass that stages the next units keeps the other core busy.
    // Measured over 200k company profiles (`npm run bench -- --only sluice-parquet`, five runs each): peak RSS
    // 695–742 → 484–561 MB; wall 7.4–9.5 → 8.4–9.4 s, CPU 9.9–12.7 → 9.3–10.5 s. A memory limit would bound it
    // further (256 MB: 526 MB) but makes a publish of wide rows fail where DuckDB could have finished it (128 MB
    // ran out of memory; 192 MB spilled, 1.6× slower).
    await this.conn.run('SET threads = 1');
    await this.conn.run(`SET allocator_flush_threshold = '32MB'`);
  }

  async committedUnits(): Promise<Set<string>> {
    return this.dir().committedUnits();
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>): Promise<CommitResult> {
    const out = this.dir();
    if (out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const name = `${unitFileStem(unit.id)}.${randomBytes(4).toString('hex')}.staged`;
    const file = path.join(out.stagedDir, name);
    const schema = new InferredSchema({ temporalText: true });
    let committed = false;
    try {
      const { rows, bytes } = await writeNdjson(batches, file, { schema, sync: true });
      const cases = schema.conflicts.caseConflicts();
      if (cases.length > 0)
        throw new SluiceError(
          `parquet sink: field names that differ only in case: ${cases.map((c) => `${c.path} (${c.seen.join(' / ')})`).join(', ')}`,
          { hint: 'Parquet readers match names ignoring case: rename one of each pair with the `rename` transform' },
        );
      if (schema.conflicts.size > 0)
        this.context().log.warn(`parquet sink: unit ${unit.id}: ${schema.conflicts.format()}`);
      failpoint('parquet:staged');
      const entry: ManifestUnit = { records: rows, files: [], committed_at: new Date().toISOString() };
      if (rows > 0)
        entry.staged = {
          file: `${STAGED_DIR}/${name}`,
          bytes,
          schema: [...schema.columns].map(([k, t]) => [k, serializeType(t)]),
        };
      committed = await out.commit({
        moves: [],
        check: (m) => !Object.hasOwn(m.units, unit.id),
        apply: (m) => {
          m.units[unit.id] = entry;
        },
      });
      if (rows === 0) await rm(file, { force: true });
      if (committed && this.stagedEnough()) {
        // The unit is committed either way; a publish that fails now is retried by finish(), which reports it.
        await this.publish(false).catch((err: unknown) =>
          this.context().log.warn(`parquet sink: publishing staged units failed, retried at the end: ${String(err)}`),
        );
      }
      return { committed, records: committed ? rows : 0 };
    } finally {
      if (!committed) await rm(file, { force: true });
    }
  }

  /** Publishes whatever is still staged, then (for `replace`) swaps the new generation in. */
  async finish(): Promise<void> {
    await this.publish(true);
    await this.dir().finish();
  }

  async close(): Promise<void> {
    this.conn?.closeSync();
    this.db?.closeSync();
    this.conn = undefined;
    this.db = undefined;
    this.out = undefined;
  }

  /** Staged rows would make a file of about the target size. */
  private stagedEnough(): boolean {
    let n = 0;
    for (const u of Object.values(this.dir().manifest.units)) n += u.staged?.bytes ?? 0;
    return n >= this.targetBytes * this.jsonPerParquet;
  }

  /**
   * Every staged unit → target-size Parquet files, moved into place with one manifest swap. Unless `all`, only
   * when enough is staged: units that triggered a publish while another was running must not make a small file.
   */
  private publish(all: boolean): Promise<void> {
    return this.publishing.run(async () => {
      if (!all && !this.stagedEnough()) return;
      const out = this.dir();
      const staged = Object.entries(out.manifest.units).filter(([, u]) => u.staged !== undefined);
      if (staged.length === 0) return;
      const schema = new InferredSchema({ temporalText: true });
      // Starting from what earlier publishes wrote keeps one column and struct-field order across all the files of
      // the directory, whichever unit a field first appeared in.
      if (out.manifest.schema) schema.absorb(new Map(out.manifest.schema.map(([k, s]) => [k, deserializeType(s)])));
      for (const [, u] of staged) schema.absorb(new Map(u.staged!.schema.map(([k, s]) => [k, deserializeType(s)])));
      const cases = schema.conflicts.caseConflicts();
      if (cases.length > 0)
        throw new SluiceError(
          `parquet sink: field names that differ only in case: ${cases.map((c) => c.path).join(', ')}`,
          {
            hint: 'rename one of each pair with the `rename` transform',
          },
        );
      for (const col of this.config.partition_by ?? []) {
        const t = schema.column(col);
        if (t === undefined || t.kind === 'list' || t.kind === 'struct')
          throw new SluiceError(
            `parquet sink: partition column "${col}" is ${t === undefined ? 'not in the data' : `a ${t.kind.toUpperCase()}`}`,
            {
              hint: 'partition by top-level scalar fields (e.g. `partition_by: [country_code]`), or flatten the field first',
            },
          );
      }
      const stagedPaths = staged.map(([, u]) => path.join(out.dataDir, u.staged!.file));
      const jsonBytes = staged.reduce((n, [, u]) => n + u.staged!.bytes, 0);
      const publishId = `${new Date().toISOString().replace(/[-:.TZ]/g, '')}-${randomBytes(3).toString('hex')}`;
      const tmpOut = out.tempPath(`publish-${publishId}`, 'dir');
      let keep = false;
      try {
        await copyToParquet(this.connection(), this.config, {
          files: stagedPaths,
          schema,
          dir: tmpOut,
          publishId,
          targetBytes: this.targetBytes,
        });
        const moves: Move[] = [];
        let parquetBytes = 0;
        const written = await listFiles(tmpOut);
        const empty = await emptyFiles(this.connection(), tmpOut, written);
        for (const rel of written) {
          if (empty.has(rel)) continue;
          moves.push({ from: path.join(tmpOut, rel), to: rel.replace(/\.tmp$/, '.parquet') });
          parquetBytes += (await stat(path.join(tmpOut, rel))).size;
        }
        const files = moves.map((m) => m.to);
        await out.commit({
          moves,
          apply: (m) => {
            for (const [id] of staged) {
              const u = m.units[id];
              if (!u) continue;
              delete u.staged;
              u.files = files;
            }
            m.schema = [...schema.columns].map(([k, t]) => [k, serializeType(t)]);
          },
          after: async () => {
            await Promise.all(stagedPaths.map((p) => rm(p, { force: true })));
          },
        });
        if (parquetBytes > 0) this.jsonPerParquet = Math.max(1, jsonBytes / parquetBytes);
        this.context().log.info(
          `parquet sink: published ${staged.length} unit(s) as ${files.length} file(s), ${(parquetBytes / 2 ** 20).toFixed(1)} MB`,
        );
      } catch (err) {
        keep = err instanceof CommitIncompleteError;
        throw err;
      } finally {
        if (!keep) await rm(tmpOut, { recursive: true, force: true });
      }
    });
  }

  private context(): SinkContext {
    if (!this.ctx) throw new Error('parquet sink used before open()');
    return this.ctx;
  }

  private dir(): OutputDir {
    if (!this.out) throw new Error('parquet sink used before open()');
    return this.out;
  }

  private connection(): DuckDBConnection {
    if (!this.conn) throw new Error('parquet sink used before open()');
    return this.conn;
  }
}

export const parquetSink: ComponentDef<'sink', ParquetSinkConfig, Sink> = {
  kind: 'sink',
  type: 'parquet',
  description: 'Parquet files (zstd, optionally hive-partitioned) of about a target size, with a manifest.',
  schema: parquetSinkSchema,
  create(config: ParquetSinkConfig, deps: ComponentDeps): Sink {
    return new ParquetSink(config, { baseDir: deps.baseDir });
  },
};
